"""The pipeline around a judge (``judges.pipeline``): the chain, a judge's bug surfacing instead of a fallback, a
batch of plain judge functions judged concurrently."""

import httpx2
import pytest
from judge_mocks import FAST, PROBLEM, Script, openai_reply, spec

from poly_epo_trl.judges import (
    AnswerJudge,
    JudgePipeline,
    JudgeSpec,
    LMOptions,
    OpenAICompatibleJudge,
    ServerOptions,
)


def test_chain_falls_back_to_the_next_judge():
    script = Script([500] * 100, reply=openai_reply)
    server = OpenAICompatibleJudge(
        ServerOptions("http://x/v1", "m"), LMOptions(retry=FAST), httpx2.MockTransport(script)
    )
    first = JudgePipeline(server, chain=[AnswerJudge(mode="last_number")])
    [result] = first.judge_groups([(PROBLEM, ["x = 3", "so 3", "it is 2", "nothing"])])
    assert result.labels == [0, 0, 1, 100] and result.judge == "answer" and result.fallback is None
    assert first.pop_stats()["answered_by/answer"] == 1
    chained = spec("openai:http://x/v1/m,answer:last_number", retry=FAST)
    assert isinstance(chained.chain[0], AnswerJudge)


def test_a_bug_in_a_judge_surfaces_instead_of_falling_back():
    """A judge function's programming error (here a TypeError) is raised with its traceback whatever the fallback;
    the judge's expected failures (I/O errors, answers of the wrong shape) still fall back."""

    def buggy(prompt, completions):
        return len(completions) + "1"

    def offline(prompt, completions):
        raise ConnectionError("the judge server went away")

    def wrong_shape(prompt, completions):
        return [0]

    with pytest.raises(TypeError, match="unsupported operand"):
        JudgeSpec(fallback="distinct").around(buggy).cluster_groups([("p", ["a", "b"])])
    for fn in (offline, wrong_shape):
        result = JudgeSpec(fallback="distinct").around(fn).judge_groups([("p", ["a", "b"])])[0]
        assert result.fallback == "distinct" and result.labels == [0, 1], fn.__name__


def test_plain_judge_functions_judge_groups_concurrently():
    """A sync judge runs in worker threads: four groups of 0.25 s take about 0.25 s, not 1 s (unless capped at 1)."""
    import time as clock

    def slow(prompt, completions):
        clock.sleep(0.25)
        return list(range(len(completions)))

    groups = [(f"p{i}", ["a", "b"]) for i in range(4)]
    for cap, low, high in ((32, 0.2, 0.6), (1, 0.95, 2.0)):
        judge = JudgeSpec(max_concurrency=cap).around(slow)
        start = clock.perf_counter()
        assert judge.cluster_groups(groups) == [[0, 1]] * 4
        assert low < clock.perf_counter() - start < high
