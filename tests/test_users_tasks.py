"""What users bring that the paper's setting does not: a judge that does not fit the task, tiny groups, judge replies
with more than the ids, recipes with nulls and values a library refuses only later. Each is said or refused before
it trains wrongly."""

import json
import logging
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from tiny import save_tiny_model, small_config, toy_dataset
from transformers import AutoTokenizer

from poly_epo_trl import PolyEPOTrainer
from poly_epo_trl.judges import DistinctJudge, JudgePipeline, LMJudge, Reply
from poly_epo_trl.judges.errors import InvalidAnswer
from poly_epo_trl.judges.prompts import read_judgement
from poly_epo_trl.methods import SetBatch
from poly_epo_trl.trainer.judging import GroupJudging, judge_misfit
from poly_epo_trl.trainer.step import OnceWarnings
from poly_epo_trl.trainer.verdicts import audit_records

ROOT = Path(__file__).resolve().parents[1]
TINY = ROOT / "recipes/tiny/poly_epo/config_cpu.yaml"


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return save_tiny_model(tmp_path_factory.mktemp("tiny"))


def judged(cluster_ids, fallback=None) -> SetBatch:
    ids = torch.tensor(cluster_ids)
    size = ids.numel()
    verdicts = [SimpleNamespace(fallback=fallback)] * ids.shape[0]
    rewards = torch.zeros(ids.shape, dtype=torch.float64)
    return SetBatch(rewards, ids, rewards.clone(), "train", ["q"] * size, ["a"] * size, ["a"] * size, verdicts)


def test_a_judge_that_finds_no_answer_or_one_strategy_is_said_to_fit_badly():
    assert judge_misfit(judged([[100] * 7 + [0], [100] * 8]), 100).startswith("marked 93.8% of this step's")
    assert "at most one strategy" in judge_misfit(judged([[0] * 8, [0, 0, 0, 0, 100, 0, 0, 0]]), 100)
    assert judge_misfit(judged([[0, 1, 100, 100, 100, 100, 0, 1]]), 100) is None  # half degenerate: fits
    assert judge_misfit(judged([[100] * 8], fallback="distinct"), 100) is None  # the fallback's, not the judge's


def test_the_misfit_warning_is_said_once_then_again_when_it_persists(caplog):
    """At its first training step, then when it has lasted 10 steps in a row; a step that fits resets the count."""
    where = SimpleNamespace(where=lambda: "the answer judge")
    judging = SimpleNamespace(
        settings=SimpleNamespace(degenerate_cluster_id=100), misfit_steps=0, warnings=OnceWarnings(), pipeline=where
    )
    bad, good = judged([[100] * 8]), judged([[0, 1, 2, 3, 0, 1, 2, 3]])
    with caplog.at_level(logging.WARNING):
        for batch in [bad, bad, good, *[bad] * 10]:
            GroupJudging.check_fit(judging, batch)
    said = [r.getMessage() for r in caplog.records if "may not fit" in r.getMessage()]
    assert len(said) == 2
    assert said[0].startswith("The answer judge marked 100.0% of this step's completions degenerate")
    assert "for 10 training steps in a row" in said[1] and "judge: embedding" in said[1]


def test_a_run_whose_judge_reads_no_answer_warns(model_dir, tmp_path, caplog):
    """A tiny run whose completions the judge finds no answer in says so, naming the judges that fit."""
    with caplog.at_level(logging.WARNING):
        PolyEPOTrainer(
            model=str(model_dir),
            reward_funcs=lambda completions, **kwargs: [1.0] * len(completions),
            args=small_config(tmp_path / "out", max_completion_length=4, max_steps=1),
            train_dataset=toy_dataset(),
            processing_class=AutoTokenizer.from_pretrained(model_dir),
            judge=lambda prompt, completions: [100] * len(completions),
        ).train()
    assert "marked 100.0% of this step's completions degenerate" in caplog.text
    assert "judge: answer:text" in caplog.text


def test_a_fitted_set_of_one_is_said_at_start_up(model_dir, tmp_path):
    trainer = PolyEPOTrainer(
        model=str(model_dir),
        reward_funcs=lambda completions, **kwargs: [1.0] * len(completions),
        args=small_config(tmp_path / "out", num_generations=2, set_size=None, per_device_train_batch_size=2),
        train_dataset=toy_dataset(),
        processing_class=AutoTokenizer.from_pretrained(model_dir),
        judge="answer",
    )
    assert "set_size 1 (fitted: a group of num_generations=2 cannot hold the default 4" in trainer.start_line
    assert "a set of one rollout holds no diversity, so Poly-EPO's advantage is Dr.GRPO's on the mean" in (
        trainer.start_line
    )


def test_a_reply_holding_every_id_is_read_whatever_else_it_holds_and_the_audit_keeps_the_rest():
    reply = '{"1": {"strategy": "a", "cluster_id": 1}, "2": {"strategy": "b", "cluster_id": 2}, "note": "done"}'
    assert read_judgement(reply, 2) == ([1, 2], ["a", "b"], {"note": "done"})
    with pytest.raises(InvalidAnswer, match=r"missing \['2'\]"):
        read_judgement('{"1": 1, "note": "done"}', 2)

    class Noting(LMJudge):
        name = "noting"

        async def request(self, messages, num_completions, temperature, structured):
            return Reply(reply)

    pipeline = JudgePipeline(Noting("m"))
    result = pipeline.judge_groups([("q", ["x", "y"])])[0]
    assert result.labels == [0, 1] and result.ignored == {"note": "done"}
    batch = judged([[0, 1]])
    batch.verdicts = [result]
    (record,) = audit_records(batch, 1, 1.0)
    assert record["reply_ignored"] == {"note": "done"}
    assert pipeline.pop_stats()["replies_with_ignored_keys"] == 1


@pytest.mark.parametrize(("degenerate", "size"), [(100, 101), (0, 8), (3, 8)])
def test_the_distinct_fallback_never_hands_out_the_degenerate_id(degenerate, size):
    class Failing(DistinctJudge):
        async def acluster(self, prompt, completions):
            raise ValueError("down")

    labels = JudgePipeline(Failing(degenerate_cluster_id=degenerate), fallback="distinct")("q", ["x"] * size)
    assert degenerate not in labels and len(set(labels)) == size
    assert degenerate not in DistinctJudge(degenerate_cluster_id=degenerate)("q", ["x"] * size)


def test_a_null_method_setting_is_said_with_the_value_the_run_uses(tmp_path, capsys, caplog, monkeypatch):
    """``set_size: null`` reads as unset: the log says so with the size the run will use, and so does the dry run's
    line, with what a set of one means."""
    from poly_epo_trl.commands.train import main

    monkeypatch.chdir(ROOT)
    recipe = tmp_path / "recipe.yaml"
    text = TINY.read_text().replace("output_dir: outputs/tiny/poly_epo/cpu", f"output_dir: {tmp_path / 'out'}")
    recipe.write_text(
        text.replace("set_size: 4", "set_size: null").replace("num_generations: 8", "num_generations: 2")
    )
    with caplog.at_level(logging.WARNING):
        main(["--config", str(recipe), "--dry_run", "true"])
    said = "set_size: null in the recipe reads as unset: the run uses set_size=1 (fitted: a group of num_generations=2"
    assert said in caplog.text
    out = capsys.readouterr().out
    assert "dry run ok: trainer=poly_epo (set_size 1 (fitted: a group of num_generations=2 cannot hold" in out
    assert "a set of one rollout holds no diversity" in out


def test_the_door_takes_the_good_spellings(tmp_path):
    from poly_epo_trl.trainer import PolyEPOConfig

    good = {"lr_scheduler_type": "cosine_with_min_lr", "lr_scheduler_kwargs": json.dumps({"min_lr_rate": 0.1})}
    config = PolyEPOConfig(str(tmp_path), use_cpu=True, bf16=False, report_to=["none"], seed=2**32 - 1, **good)
    assert config.loss_type == "dr_grpo" and config.lr_scheduler_kwargs == {"min_lr_rate": 0.1}
