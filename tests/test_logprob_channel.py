"""The log-prob channel: each completion's summed log-probability under the policy that sampled it, and its length, for
the methods that read them; taken from TRL's own old_per_token_logps where TRL computed them, else one no-grad pass;
recorded in the audit trail with everything else a method read, so that its advantages can be recomputed."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from tiny import row_keys, save_tiny_model, small_config, small_settings, toy_dataset
from transformers import AutoTokenizer
from trl import GRPOConfig

from poly_epo_trl import PolyEPOTrainer
from poly_epo_trl.judges.audit import read_audit
from poly_epo_trl.methods import METHODS, SetBatch, apply_method, resolve_settings

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return save_tiny_model(tmp_path_factory.mktemp("tiny"))


def digit_reward(completions, **kwargs):
    """A dense reward with several correct rollouts per group, so UCPO has a correct set to redistribute over."""
    return [1.0 if sum(ch.isdigit() for ch in c) >= 2 else 0.0 for c in completions]


class Checking(PolyEPOTrainer):
    """At the loss (the weights that sampled the batch, with one optimizer step per generation), the policy's
    per-token log-probabilities of each completion, summed over its mask, as TRL's loss computes them."""

    def _compute_loss(self, model, inputs):
        with torch.no_grad():
            ids = torch.cat([inputs["prompt_ids"], inputs["completion_ids"]], dim=1)
            mask = torch.cat([inputs["prompt_mask"], inputs["completion_mask"]], dim=1)
            logps, _, _ = super()._get_per_token_logps_and_entropies(
                model, ids, mask, inputs["completion_ids"].size(1)
            )
        sums = (logps * inputs["completion_mask"]).sum(1).tolist()
        lengths = inputs["completion_mask"].sum(1).tolist()
        old = inputs.get("old_per_token_logps")
        olds = (old * inputs["completion_mask"]).sum(1).tolist() if old is not None else [None] * len(sums)
        keys = row_keys(self.processing_class, inputs)
        rows = list(zip(keys, sums, olds, lengths, strict=True))
        self.seen = [*getattr(self, "seen", []), (self.step.batch, rows)]
        return super()._compute_loss(model, inputs)


def by_text(batch: SetBatch, values: torch.Tensor | None = None) -> dict:
    rows = zip(batch.prompts, batch.completions, strict=True)
    values = batch.sequence_logprobs if values is None else values
    return {key: float(v) for key, v in zip(rows, values.flatten().tolist(), strict=True)}


def test_the_door_gives_the_sampling_policys_summed_log_probabilities(model_dir, tmp_path):
    """Transformers generation, one optimizer step per generation: the door's one no-grad pass equals the policy's
    per-token log-probabilities at the step they were sampled, summed over the completion mask, to 1e-4; the
    lengths are the completions' token counts; the pass is timed as time/logprobs."""
    trainer = Checking(
        model=str(model_dir),
        reward_funcs=digit_reward,
        args=small_config(tmp_path / "out", max_completion_length=6, learning_rate=1e-2, max_steps=3),
        train_dataset=toy_dataset(),
        processing_class=AutoTokenizer.from_pretrained(model_dir),
        method="ucpo",
    )
    trainer.train()
    checked = 0
    for batch, rows in trainer.seen:
        door, lengths = by_text(batch), by_text(batch, batch.completion_lengths)
        for key, summed, _, length in rows:
            assert door[key] == pytest.approx(summed, abs=1e-4), key
            assert lengths[key] == length  # TRL's completion mask: the tokens sampled, a closing EOS included
            checked += 1
    assert checked >= 24
    assert all(row["time/logprobs"] > 0 for row in trainer.state.log_history if "time/logprobs" in row)


def test_the_door_takes_trls_old_log_probabilities_where_trl_computed_them(model_dir, tmp_path):
    """A generation batch trained on over two steps (steps_per_generation 2, gradient_accumulation_steps 1): TRL
    computes old_per_token_logps before the rewards, and the door reads those, with no pass of its own."""
    calls = []

    class Counting(Checking):
        def _get_per_token_logps_and_entropies(self, model, *args, **kwargs):
            calls.append(self.state.global_step)
            return super()._get_per_token_logps_and_entropies(model, *args, **kwargs)

    trainer = Counting(
        model=str(model_dir),
        reward_funcs=digit_reward,
        args=small_config(tmp_path / "out", max_completion_length=6, max_steps=2, steps_per_generation=2),
        train_dataset=toy_dataset(),
        processing_class=AutoTokenizer.from_pretrained(model_dir),
        method="unlikeliness",
    )
    trainer.train()
    batch, rows = trainer.seen[0]
    door = by_text(batch)
    assert all(old is not None and door[key] == pytest.approx(old, abs=1e-5) for key, _, old, _ in rows)
    # TRL's passes only: its old pass per generation (read by the door) and its loss's pass per step (the check's own
    # pass above goes around this override); none of the door's
    generations = len({id(b) for b, _ in trainer.seen})
    assert generations == 1 and len(calls) == generations + len(trainer.seen)


def test_f_grpo_under_a_plain_grpo_config_trains_on_the_focal_weighted_advantages(model_dir, tmp_path, caplog):
    """GRPOConfig's default scale_rewards='group' would divide the focal weight out of each group; the method owns
    its normalisation, the start-up line says so, and the loss sees the focal-weighted GRPO advantages."""
    settings = small_settings(tmp_path / "out", max_completion_length=6, max_steps=2)
    settings.pop("set_size")
    trainer = Checking(
        model=str(model_dir),
        reward_funcs=digit_reward,
        args=GRPOConfig(**settings),
        train_dataset=toy_dataset(),
        processing_class=AutoTokenizer.from_pretrained(model_dir),
        method="f_grpo",
    )
    assert "scale_rewards='group' is not applied on top of them" in trainer.start_line
    trainer.train()
    method = METHODS.get("f_grpo")
    for batch, _ in trainer.seen:
        fresh = SetBatch(*[getattr(batch, f) for f in ("rewards", "cluster_ids", "advantages", "mode")],
                         batch.prompts, batch.completions, batch.inputs, batch.verdicts)  # fmt: skip
        expected = apply_method(method, fresh, resolve_settings(method, {}, 8).settings, "none").advantages
        torch.testing.assert_close(batch.advantages, expected)
        mixed = [(r > 0).any() and (r < 1).any() for r in batch.rewards]
        assert any(mixed)


def recompute(method_name: str, record: dict) -> list[float]:
    """A group's advantages from its audit record alone."""
    rewards = torch.tensor([[float("nan") if r is None else r for r in record["rewards"]]], dtype=torch.float64)
    size = rewards.shape[1]
    batch = SetBatch(
        rewards, torch.tensor([record["cluster_ids"]]), torch.full_like(rewards, torch.nan), record["mode"],
        [record["problem"]] * size, ["x"] * size, record["completions"], [None],
        reward_floor=record.get("reward_floor", 0.0),
    )  # fmt: skip
    batch.sequence_logprobs = torch.tensor([record["sequence_logprobs"]], dtype=torch.float64)
    batch.completion_lengths = torch.tensor([record["completion_lengths"]], dtype=torch.float64)
    method = METHODS.get(method_name)
    return apply_method(method, batch, resolve_settings(method, {}, size).settings, "none").advantages[0].tolist()


@pytest.mark.parametrize("method", ["ucpo", "unlikeliness"])
def test_poly_epo_train_with_a_log_prob_method_trains_and_its_audit_file_recomputes_its_advantages(method, tmp_path):
    """The tiny recipe with trainer: ucpo (or unlikeliness), through poly-epo train on CPU: each group of the audit
    file carries the method's inputs (judge: null, sequence_logprobs, completion_lengths) and its advantages are what
    the method gives those inputs."""
    recipe = (ROOT / "recipes/tiny/poly_epo/config_cpu.yaml").read_text()
    recipe = recipe.replace("trainer: poly_epo", f"trainer: {method}").replace("max_steps: 200", "max_steps: 3")
    recipe = recipe.replace("per_device_train_batch_size: 64", "per_device_train_batch_size: 16")
    recipe = re.sub(r"output_dir: .*", f"output_dir: {tmp_path / 'run'}", recipe)
    (tmp_path / "recipe.yaml").write_text(recipe)
    done = subprocess.run(
        [sys.executable, "-m", "poly_epo_trl.train", "--config", str(tmp_path / "recipe.yaml")],
        capture_output=True, text=True, cwd=ROOT, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    records = read_audit(tmp_path / "run")
    assert len(records) == 3 * 2 and {r["judge"] for r in records} == {None}
    for record in records:
        assert len(record["sequence_logprobs"]) == len(record["completion_lengths"]) == 8
        assert recompute(method, record) == pytest.approx(record["advantages"], abs=1e-6)
    assert json.loads((tmp_path / "run" / "trainer_state.json").read_text())["global_step"] == 3
