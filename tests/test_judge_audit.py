"""The audit judge: a second judge re-judges some of the training judge's groups over training, its agreement is
logged, a parting is said, both labelings are recorded, and a resumed run goes on with the audit."""

import json
import logging
import random

import pytest
from tiny import save_tiny_model, small_config, toy_dataset
from transformers import AutoTokenizer

from poly_epo_trl import PolyEPOTrainer
from poly_epo_trl.judges.audit import read_audit
from poly_epo_trl.tasks.sum_pair import pair_judge, sum_pair_reward


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return save_tiny_model(tmp_path_factory.mktemp("tiny"))


def random_judge(prompt, completions):
    """A training judge that labels at random: what a gamed or broken judge looks like from outside."""
    rng = random.Random(hash((prompt, tuple(completions))) % 2**32)
    return [rng.randrange(4) for _ in completions]


def train(model_dir, out, judge, audit_judge, caplog, **overrides):
    settings = dict(max_completion_length=6, per_device_train_batch_size=16, max_steps=3, audit_every=1)
    settings |= overrides
    with caplog.at_level(logging.WARNING):
        trainer = PolyEPOTrainer(
            model=str(model_dir),
            reward_funcs=sum_pair_reward,
            args=small_config(out, audit_groups=2, **settings),
            train_dataset=toy_dataset(),
            processing_class=AutoTokenizer.from_pretrained(model_dir),
            judge=judge,
            audit_judge=audit_judge,
        )
        trainer.train()
    return trainer


def audits(trainer) -> list[dict]:
    return [row for row in trainer.state.log_history if "judge_audit/adjusted_rand" in row]


def test_a_training_judge_labelling_at_random_is_caught_by_the_exact_audit_judge(model_dir, tmp_path, caplog):
    trainer = train(model_dir, tmp_path / "random", random_judge, pair_judge, caplog)
    logged = audits(trainer)
    assert len(logged) == 3 and all(row["judge_audit/adjusted_rand"] < 0.25 for row in logged), logged
    assert all(row["judge_audit/seconds"] >= 0 for row in logged)
    said = [r.getMessage() for r in caplog.records if "audit_warn_below" in r.getMessage()]
    assert said and "training judge (random_judge)" in said[0] and "audit judge (" in said[0], said
    records = [r for r in read_audit(tmp_path / "random") if "audit" in r]
    assert len(records) == 3 * 2  # two audited groups a step, whatever judge_audit_fraction
    for record in records:
        assert len(record["audit"]["cluster_ids"]) == len(record["cluster_ids"]) == 8
        assert record["audit"]["judge"] == "pair_judge" and record["judge"] == "random_judge"


def test_the_same_judge_as_both_agrees_fully_and_says_nothing(model_dir, tmp_path, caplog):
    trainer = train(model_dir, tmp_path / "same", pair_judge, pair_judge, caplog)
    logged = audits(trainer)
    assert len(logged) == 3 and all(row["judge_audit/adjusted_rand"] == 1.0 for row in logged)
    assert all(row["judge_audit/distinct_train"] == row["judge_audit/distinct_audit"] for row in logged)
    assert all(row["judge_audit/degenerate_agreement"] == 1.0 for row in logged)
    assert not [r for r in caplog.records if "audit judge" in r.getMessage()]


def test_without_an_audit_judge_nothing_changes(model_dir, tmp_path, caplog):
    trainer = train(model_dir, tmp_path / "none", pair_judge, None, caplog)
    assert not audits(trainer) and not any("judge_audit" in key for row in trainer.state.log_history for key in row)
    assert not [r for r in read_audit(tmp_path / "none") if "audit" in r]


def test_audits_every_few_steps_and_a_resumed_run_goes_on_with_the_audit(model_dir, tmp_path, caplog):
    """audit_every 2: audits at steps 1 and 3 of 4; a run stopped at step 2's checkpoint and resumed audits step 3
    as the uninterrupted run does, its count of partings restored from the checkpoint."""
    whole = train(model_dir, tmp_path / "whole", random_judge, pair_judge, caplog, max_steps=4, audit_every=2)
    assert [row["step"] for row in audits(whole)] == [1, 3]
    out = tmp_path / "resumed"
    first = train(
        model_dir, out, random_judge, pair_judge, caplog, max_steps=2, audit_every=2, save_strategy="steps",
        save_steps=2,
    )  # fmt: skip
    assert first.judging.auditor.parted in (0, 1)
    state = json.loads((out / "checkpoint-2" / "trainer_state.json").read_text())
    assert state["global_step"] == 2
    resumed = PolyEPOTrainer(
        model=str(model_dir),
        reward_funcs=sum_pair_reward,
        args=small_config(out, max_completion_length=6, per_device_train_batch_size=16, max_steps=4, audit_every=2,
                          audit_groups=2),
        train_dataset=toy_dataset(),
        processing_class=AutoTokenizer.from_pretrained(model_dir),
        judge=random_judge,
        audit_judge=pair_judge,
    )  # fmt: skip
    resumed.train(resume_from_checkpoint=str(out / "checkpoint-2"))
    assert [row["step"] for row in audits(resumed)] == [1, 3]
    assert resumed.judging.auditor.parted == whole.judging.auditor.parted
    steps = sorted({r["step"] for r in read_audit(out) if "audit" in r})
    assert steps == [1, 3]


def test_poly_epo_plot_draws_the_agreement_and_judge_agreement_reads_the_audit_labels(model_dir, tmp_path, caplog):
    from poly_epo_trl.commands.agreement import main as agreement
    from poly_epo_trl.evaluation.curves import panels_of, plot_runs

    out = tmp_path / "run"
    trainer = train(model_dir, out, random_judge, pair_judge, caplog)
    trainer.save_state()
    panels = dict(panels_of([trainer.state.log_history]))
    assert panels["training judge vs audit judge: adjusted Rand"] == ["judge_audit/adjusted_rand"]
    distinct = ["judge_audit/distinct_train", "judge_audit/distinct_audit"]
    assert panels["distinct clusters per audited group"] == distinct
    assert plot_runs([out], out / "curves.png").stat().st_size > 10_000
    report = agreement(
        ["--judged_groups", str(out), "--judges", "sum_pair", "--output_dir", str(tmp_path / "agreement")]
    )
    assert "audit:pair_judge" in report["judges"]
    pair = next(p for p in report["pairs"] if p["judges"] == ["recorded", "audit:pair_judge"])
    assert pair["groups"] == 3 * 2 and pair["ari"]["mean"] < 0.25
