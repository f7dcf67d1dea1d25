"""The method door: a new advantage is one file, a registered function of the judged batch, trained from a recipe
with nothing else changed; the trainer does the rest for every method. The two literature methods that ship
(Pass@k Training's advantage, a cross-step novelty bonus) train from a recipe, and the novelty bonus's state resumes
exactly after kill -9."""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import textwrap
from dataclasses import dataclass, field

import pytest
import torch
from pass_at_k_reference import chen_et_al
from tiny import save_tiny_model, toy_dataset
from training_run import ENV, ROOT, Run, max_difference
from trl import GRPOConfig

from poly_epo_trl import marginal_set_advantages
from poly_epo_trl.commands.train import main, prepare
from poly_epo_trl.judges import JudgeResult
from poly_epo_trl.methods import (
    FITS_GROUP,
    METHODS,
    DiversitySettings,
    Method,
    SetBatch,
    advantage_method,
    apply_method,
    get_method,
)
from poly_epo_trl.methods.novelty import OutcomeCounts, novelty
from poly_epo_trl.methods.pass_at_k import group_advantages
from poly_epo_trl.recipe import RecipeError
from poly_epo_trl.trainer import DrGRPOTrainer, GRPODivTrainer, PolyEPOConfig, PolyEPOTrainer

TINY = ["--config", "recipes/tiny/poly_epo/config_cpu.yaml", "--max_steps", "2", "--logging_steps", "1"]
SETTINGS = DiversitySettings()  # novelty's own; the correctness threshold is the batch's (the run's)
MY_METHOD = '''
"""Dr.GRPO's advantage times (N / |cluster(y)|) ** power: a rollout in a small cluster counts more."""

from dataclasses import dataclass, field

from poly_epo_trl.methods import advantage_method


@dataclass
class ClusterScaled:
    power: float = field(default=1.0, metadata={"help": "The exponent of N / |cluster(y)|."})


@advantage_method("cluster_scaled", settings=ClusterScaled)
def cluster_scaled(batch, settings):
    grpo = batch.rewards - batch.rewards.nanmean(1, keepdim=True)
    return grpo * (batch.group_size / batch.cluster_sizes()) ** settings.power
'''


@dataclass
class Knob:
    power: float = field(default=1.0, metadata={"help": "The exponent of N / |cluster(y)|."})

    def check(self) -> None:
        if self.power < 0:
            raise ValueError(f"power must be non-negative, got {self.power}.")


@advantage_method("clustered_power", settings=Knob)
def clustered_power(batch, settings):
    return (batch.rewards - batch.rewards.nanmean(1, keepdim=True)) * (batch.group_size / batch.cluster_sizes()) ** (
        settings.power
    )


@dataclass
class OwnCoef:
    diversity_coef: float = field(default=0.1, metadata={"help": "A weight of its own, named as GRPO+DIV's."})


@advantage_method("scaled_own_coef", settings=OwnCoef, needs_judge=False)
def own_coef(batch, settings):
    return settings.diversity_coef * (batch.rewards - batch.rewards.nanmean(1, keepdim=True))


@dataclass
class Pool:
    pool_size: int = field(default=4, metadata={"help": "Rollouts pooled per score.", FITS_GROUP: True})


@advantage_method("pooled_size", settings=Pool, needs_judge=False)
def pooled_size(batch, settings):
    return batch.rewards - batch.rewards.nanmean(1, keepdim=True)


def door(argv: list[str]) -> object:
    """The settings the recipe's method trains with, as ``poly-epo train`` resolves them before anything loads."""
    return prepare([*argv, "--dry_run", "true"])[3].method_settings


def batch_of(rewards: list[list[float]], clusters: list[list[int]], mode: str = "train", texts=None) -> SetBatch:
    r = torch.tensor(rewards, dtype=torch.float64)
    c = torch.tensor(clusters)
    g, n = r.shape
    prompts = [f"problem {i // n}" for i in range(g * n)]
    texts = texts or [f"answer {x}" for row in clusters for x in row]
    verdicts = [JudgeResult(row, "test") for row in clusters]
    return SetBatch(r, c, torch.full_like(r, torch.nan), mode, prompts, texts, list(texts), verdicts)


@pytest.mark.slow
def test_a_method_in_its_own_module_trains_from_a_recipe_with_nothing_else_changed(tmp_path):
    """A scratch package with one new file, named by the recipe's ``trainer:`` as ``package.module:name``, and a
    setting of the method's own set by the recipe: the run trains on exactly that method's advantages with that
    setting (read back from the audit trail of every judged group), and logs them under the method's name."""
    (tmp_path / "mypkg").mkdir()
    (tmp_path / "mypkg" / "__init__.py").write_text("")
    (tmp_path / "mypkg" / "mymethod.py").write_text(textwrap.dedent(MY_METHOD))
    command = [sys.executable, "-m", "poly_epo_trl.train", "--config", str(ROOT / TINY[1]), *TINY[2:]]
    command += ["--trainer", "mypkg.mymethod:cluster_scaled", "--power", "2.0", "--output_dir", str(tmp_path / "out")]
    done = subprocess.run(command, cwd=tmp_path, env=ENV, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    records = [json.loads(line) for line in (tmp_path / "out" / "judged_groups.jsonl").read_text().splitlines()]
    assert {r["step"] for r in records} == {1, 2}
    for record in records:
        rewards = torch.tensor(record["rewards"], dtype=torch.float64)
        ids = torch.tensor(record["cluster_ids"])
        sizes = (ids.unsqueeze(1) == ids.unsqueeze(0)).sum(1)
        expected = (rewards - rewards.mean()) * (len(ids) / sizes) ** 2
        torch.testing.assert_close(
            torch.tensor(record["advantages"], dtype=torch.float64), expected, atol=1e-6, rtol=0
        )
    assert any(abs(a) > 0 for r in records for a in r["advantages"])
    assert any(len(set(r["cluster_ids"])) not in (1, len(r["cluster_ids"])) for r in records)  # the power mattered
    history = json.loads((tmp_path / "out" / "trainer_state.json").read_text())["log_history"]
    logged = [h for h in history if "loss" in h]
    assert logged and all("cluster_scaled/advantage_abs_mean" in h for h in logged)
    assert not any(key.startswith("poly_epo/advantage") for h in logged for key in h)


def test_a_methods_own_setting_is_a_recipe_key_of_its_runs_only():
    """``power`` (the registered ``clustered_power``'s own setting) is read for that method's recipe, held to its
    type and checked; another method's recipe refuses it, naming the method it belongs to."""
    from poly_epo_trl.commands.train import parse

    _, training_args, _ = parse([*TINY, "--trainer", "clustered_power", "--power", "2.5"])
    assert training_args.given_settings["power"] == 2.5 and not hasattr(training_args, "power")
    assert door([*TINY, "--trainer", "clustered_power", "--power", "2.5"]) == Knob(2.5)
    assert door([*TINY, "--trainer", "clustered_power"]) == Knob()  # unset: the method's default
    with pytest.raises(
        RecipeError, match=r"'power' \(a setting of method 'clustered_power'; this recipe's trainer is"
    ):
        parse([*TINY, "--power", "2.5"])
    with pytest.raises(RecipeError, match=r"power must be non-negative, got -1\.0"):
        door([*TINY, "--trainer", "clustered_power", "--power", "-1"])
    with pytest.raises(RecipeError, match="power"):
        parse([*TINY, "--trainer", "clustered_power", "--power", "two"])


def test_a_methods_default_is_its_own_never_the_configs(tmp_path):
    """A method that declares ``diversity_coef: float = 0.1`` (a name PolyEPOConfig carries, with GRPO+DIV's 0.5)
    trains with 0.1 where the recipe, the config and the keywords leave it out, and with what the user gave
    otherwise, the config's own default value included; the advantages it gets are 0.1 x (r - mean)."""
    recipe = tmp_path / "recipe.yaml"  # the tiny recipe without its diversity_coef: 0.5 (GRPO+DIV's key)
    lines = (ROOT / TINY[1]).read_text().splitlines()
    recipe.write_text("\n".join(line for line in lines if not line.startswith("diversity_coef:")) + "\n")
    assert "diversity_coef" not in recipe.read_text()
    for argv, expected in (([], 0.1), (["--diversity_coef", "0.5"], 0.5), (["--diversity_coef", "2"], 2.0)):
        assert door(["--config", str(recipe), "--trainer", "scaled_own_coef", *argv]) == OwnCoef(expected), argv
    model = str(save_tiny_model(tmp_path / "model"))
    reward = lambda completions, **k: [0.0] * len(completions)  # noqa: E731
    common = dict(model=model, reward_funcs=reward, train_dataset=toy_dataset(), method="scaled_own_coef")
    config = dict(output_dir=str(tmp_path / "out"), use_cpu=True, report_to="none", num_generations=4)
    assert PolyEPOTrainer(**common, args=PolyEPOConfig(**config)).method_settings == OwnCoef(0.1)
    assert PolyEPOTrainer(**common, args=PolyEPOConfig(**config, diversity_coef=0.5)).method_settings == OwnCoef(0.5)
    trainer = PolyEPOTrainer(**common, args=GRPOConfig(**config))
    assert trainer.method_settings == OwnCoef(0.1)
    batch = batch_of([[1.0, 0.0, 1.0, 1.0]], [[0, 1, 2, 3]])
    result = apply_method(trainer.method, batch, trainer.method_settings, "none")
    torch.testing.assert_close(result.advantages, 0.1 * torch.tensor([[0.25, -0.75, 0.25, 0.25]], dtype=torch.float64))


def test_resuming_with_another_value_of_a_methods_own_knob_is_refused(tmp_path, capsys):
    """A method's own setting is part of the run's identity, as the built-in ones are: the same command with
    ``power: 3.0`` does not train on from the checkpoints that ``power: 1.0`` wrote."""
    argv = [*TINY, "--trainer", "clustered_power", "--save_strategy", "steps", "--save_steps", "2"]
    argv += ["--output_dir", str(tmp_path / "run")]
    main([*argv, "--power", "1.0"])
    checkpoint = tmp_path / "run" / "checkpoint-2"
    assert json.loads((checkpoint / "run_identity.json").read_text())["power"] == 1.0
    with pytest.raises(SystemExit):
        main([*argv, "--power", "3.0", "--max_steps", "4"])
    err = capsys.readouterr().err
    assert f"{checkpoint} was written by another run (trainer 'clustered_power'): power 1.0 there, 3.0 here" in err
    assert main([*argv, "--power", "1.0", "--max_steps", "4"]).state.global_step == 4  # the same knob resumes


def test_a_methods_own_setting_is_a_keyword_of_its_trainers_only(tmp_path):
    model = str(save_tiny_model(tmp_path / "model"))
    args = PolyEPOConfig(
        output_dir=str(tmp_path / "out"), use_cpu=True, report_to="none", num_generations=4, set_size=2
    )
    reward = lambda completions, **k: [0.0] * len(completions)  # noqa: E731
    common = dict(model=model, reward_funcs=reward, args=args, train_dataset=toy_dataset())
    with pytest.raises(TypeError, match="power is a setting of method 'clustered_power', and this run trains with"):
        PolyEPOTrainer(**common, judge="distinct", power=2.0)
    trainer = PolyEPOTrainer(**common, judge="distinct", method="clustered_power", power=2.0)
    assert trainer.method_settings == Knob(power=2.0)
    with pytest.raises(ValueError, match="Method 'clustered_power': power must be non-negative"):
        PolyEPOTrainer(**common, judge="distinct", method="clustered_power", power=-1.0)


def test_a_set_objective_of_ones_own_is_given_the_runs_degenerate_id_and_threshold():
    seen = {}

    def correct_and_distinct(rewards, cluster_ids, degenerate_cluster_id, correct_reward_threshold):
        seen.update(degenerate=degenerate_cluster_id, threshold=correct_reward_threshold)
        correct = (rewards >= correct_reward_threshold) & (cluster_ids != degenerate_cluster_id)
        return correct.any(-1).to(rewards.dtype)

    rewards = torch.tensor([[1.0, 0.5, 0.0, 1.0]], dtype=torch.float64)
    clusters = torch.tensor([[7, 1, 2, 3]])
    advantages = marginal_set_advantages(
        rewards, clusters, 2, correct_and_distinct, degenerate_cluster_id=7, correct_reward_threshold=0.5
    )
    assert seen == {"degenerate": 7, "threshold": 0.5}
    # sets of 2 that hold a correct, non-degenerate rollout: every set but {0, 2}; rollout 2 is in the one failing set
    assert advantages[0, 2] < 0 and advantages[0, 1] > 0 and advantages[0, 3] > 0


def test_a_plain_function_is_an_advantage_method_that_needs_a_judge():
    def doubled(batch, settings):
        return 2 * (batch.rewards - batch.rewards.nanmean(1, keepdim=True))

    method = get_method(doubled)
    assert (method.kind, method.needs_judge, method.name) == ("advantage", True, "doubled")
    assert get_method("poly_epo") is METHODS.get("poly_epo")


def test_every_method_decision_is_the_methods_own():
    """``needs_judge`` and the kind come from the registry; no trainer compares names."""
    kinds = {name: (get_method(name).kind, get_method(name).needs_judge) for name in METHODS.names()}
    assert kinds["poly_epo"] == ("advantage", True) and kinds["grpo"] == ("none", False)
    assert kinds["grpo_div"] == ("bonus", True) and kinds["novelty"] == ("bonus", False)
    assert kinds["pass_at_k"] == ("advantage", False)
    grep = subprocess.run(["grep", "-rn", '"grpo"', "poly_epo_trl"], cwd=ROOT, capture_output=True, text=True)
    decisions = [line for line in grep.stdout.splitlines() if "==" in line or "!=" in line or " in (" in line]
    assert decisions == [] or all("fallback" in line for line in decisions), decisions


def test_the_trainer_applies_fallbacks_and_scaling_around_any_method():
    @advantage_method()
    def ones(batch, settings):
        return torch.ones_like(batch.rewards)

    batch = batch_of([[1.0, 0.0, 1.0, 0.0], [1.0, float("nan"), 0.0, 0.0]], [[0, 1, 0, 1], [0, 1, 2, 3]])
    batch.verdicts[1] = JudgeResult(None, "test", fallback="skip", cause="down")
    result = apply_method(ones, batch, settings=None, scale_rewards="none")
    assert result.advantages[0].tolist() == [1.0] * 4
    assert result.advantages[1].tolist() == [0.0] * 4  # skipped: the judge could not cluster it
    assert {"advantage_abs_mean", "advantage_std"} <= set(result.metrics)


@pytest.mark.parametrize(
    ("values", "message"),
    [
        (torch.ones(3, 4), r"shape \(3, 4\)"),
        (torch.full((2, 4), float("inf")), "finite value"),
        ("nope", "not numbers"),
    ],
)
def test_a_method_that_returns_the_wrong_thing_is_named(values, message):
    method = Method("broken", "advantage", lambda batch, settings: values)
    batch = batch_of([[1.0, 0.0, 1.0, 0.0]] * 2, [[0, 1, 0, 1]] * 2)
    with pytest.raises(ValueError, match=f"Method 'broken' returned .*{message}"):
        apply_method(method, batch, settings=None, scale_rewards="none")


def test_a_class_is_given_its_own_method_only(tmp_path):
    model = str(save_tiny_model(tmp_path / "model"))
    args = PolyEPOConfig(output_dir=str(tmp_path / "out"), use_cpu=True, report_to="none", num_generations=4)
    with pytest.raises(TypeError, match="GRPODivTrainer trains with method 'grpo_div', not 'poly_epo'"):
        GRPODivTrainer(model=model, reward_funcs=lambda **k: [0.0], args=args, method="poly_epo", judge="distinct")
    rows = toy_dataset()
    trainer = DrGRPOTrainer(
        model=model, reward_funcs=lambda completions, **k: [0.0] * len(completions), args=args, train_dataset=rows
    )
    assert trainer.method.name == "grpo" and trainer.judging is None
    assert PolyEPOTrainer.chosen_method("grpo_div") is GRPODivTrainer.chosen_method(None)


def test_an_unknown_trainer_in_a_recipe_names_what_can_be_named(tmp_path):
    with pytest.raises(SystemExit) as stopped:
        main([*TINY, "--trainer", "poly_epo2", "--output_dir", str(tmp_path)])
    assert stopped.value.code == 2


def test_parse_refuses_an_unknown_trainer_with_the_registered_names():
    from poly_epo_trl.commands.train import parse

    with pytest.raises(
        RecipeError,
        match=r"trainer='poly_epo2'.*'grpo', 'grpo_div', 'ips_grpo', 'max_rl', 'novelty', 'outcome_batch', 'pass_at",
    ):
        parse([*TINY, "--trainer", "poly_epo2"])


# Pass@k Training


@pytest.mark.parametrize("seed", range(3))
def test_pass_at_k_is_chen_et_als_form_and_the_max_objectives_set_advantage_over_sigma(seed):
    generator = torch.Generator().manual_seed(seed)
    for _ in range(60):
        n = int(torch.randint(2, 13, (1,), generator=generator))
        k = int(torch.randint(1, n, (1,), generator=generator))
        correct = (torch.rand(n, generator=generator) < torch.rand(1, generator=generator)).long().tolist()
        ours = torch.tensor(group_advantages([bool(c) for c in correct], k), dtype=torch.float64)
        if sum(correct) > 0 and correct.count(0) >= k:  # sets of k differ: sigma > 0
            reference = chen_et_al(torch.tensor([correct], dtype=torch.float64), k)[0]
            torch.testing.assert_close(ours, reference)
            rewards = torch.tensor([correct], dtype=torch.float64)
            marginal, mean = marginal_set_advantages(
                rewards, torch.zeros_like(rewards, dtype=torch.long), k, "pass_at_n", return_baseline=True
            )
            torch.testing.assert_close(ours, marginal[0] / (mean * (1 - mean)).sqrt(), rtol=1e-12, atol=1e-12)
        else:
            assert ours.abs().max() == 0


def test_pass_at_k_trains_from_a_recipe_on_cpu(tmp_path):
    recipe = ["--config", "recipes/tiny/methods/pass_at_k.yaml", *TINY[2:], "--set_size", "2"]
    trainer = main([*recipe, "--output_dir", str(tmp_path)])
    batch = trainer.last_set_batch
    assert trainer.method.name == "pass_at_k" and trainer.judging is None and trainer.state.global_step == 2
    for rewards, advantages in zip(batch.rewards.tolist(), batch.advantages.tolist(), strict=True):
        correct = [int(r >= 1.0) for r in rewards]
        if sum(correct) > 0 and correct.count(0) >= 2:
            reference = chen_et_al(torch.tensor([correct], dtype=torch.float64), 2)[0].tolist()
            torch.testing.assert_close(advantages, reference, atol=1e-5, rtol=0)
    assert "Pass@k Training" in trainer.card_section() and "pass@2" in trainer.card_section()


# The novelty bonus


def test_the_novelty_bonus_rewards_correct_outcomes_rarely_seen_before_this_step():
    counts = OutcomeCounts()
    texts = ["3+7", "3+7", "4+6", "1+1"]
    first = novelty.fn(batch_of([[1.0, 1.0, 1.0, 0.0]], [[0, 0, 1, 2]], texts=texts), SETTINGS, counts)
    # nothing seen before: every correct rollout earns 1; the wrong one nothing
    assert first.tolist() == [[1.0, 1.0, 1.0, 0.0]]
    second = novelty.fn(
        batch_of([[1.0, 1.0, 0.0, 0.0]], [[0, 1, 2, 3]], texts=["3+7", "4+6", "1+1", "9"]), SETTINGS, counts
    )
    assert second[0].tolist() == pytest.approx([1 / 3**0.5, 1 / 2**0.5, 0.0, 0.0])  # 3+7 seen twice, 4+6 once
    before = counts.state_dict()
    novelty.fn(batch_of([[1.0] * 4], [[0] * 4], "eval", texts=["3+7"] * 4), SETTINGS, counts)
    assert counts.state_dict() == before  # evaluation reads the counts, adds nothing
    restored = OutcomeCounts()
    restored.load_state_dict(json.loads(json.dumps(before)))
    assert restored.state_dict() == before


def test_the_novelty_bonus_trains_from_a_recipe_on_cpu(tmp_path):
    trainer = main(["--config", "recipes/tiny/methods/novelty.yaml", *TINY[2:], "--output_dir", str(tmp_path)])
    logged = [h for h in trainer.state.log_history if "rewards/novelty_bonus/mean" in h]
    assert len(logged) == 2 and logged[0]["rewards/novelty_bonus/mean"] > 0
    assert trainer.reward_func_names[-1] == "novelty_bonus" and trainer.judging is None
    assert sum(sum(c.values()) for c in trainer.method_state.counts.values()) == 2 * 64


@pytest.mark.slow
def test_the_novelty_bonus_resumes_exactly_after_kill_9(tmp_path):
    """Its counts are saved with each checkpoint: killed at a random step and run again, the run ends with the
    weights of an uninterrupted one, to the bit."""
    extra = ["--trainer", "novelty", "--max_steps", "20", "--save_steps", "5"]
    reference = Run(tmp_path / "reference", *extra)
    assert reference.finish() == 0, reference.output()
    step = random.Random().randint(6, 18)
    print(f"kill -9 after step {step}")
    run = Run(tmp_path / "killed", *extra)
    run.wait_for_step(step)
    run.process.kill()
    assert run.finish() == -signal.SIGKILL
    again = Run(tmp_path / "killed", *extra)
    assert again.finish() == 0, again.output()
    assert "resuming from" in again.output()
    state = torch.load(next((tmp_path / "killed").glob("checkpoint-*/resume_state_rank0.pt")), weights_only=False)
    assert state["method_state"]["counts"]
    assert max_difference(tmp_path / "reference" / "model.safetensors", tmp_path / "killed" / "model.safetensors") == 0


def test_a_methods_own_size_left_unset_is_fitted_to_the_group_by_every_route(tmp_path):
    """A user's method with a size that must fit the group (``FITS_GROUP``, default 4) and groups of 4: the recipe,
    which does not set it, and the trainer, given no keyword, both fit it to 3 and say so; a recipe that sets 4 is
    refused, naming the key. Defaults come from the resolver alone, whatever the route."""
    argv = [*TINY, "--trainer", "pooled_size", "--num_generations", "4", "--per_device_train_batch_size", "8"]
    assert door(argv) == Pool(3)
    with pytest.raises(RecipeError, match=r"pool_size=4 with num_generations=4"):
        door([*argv, "--pool_size", "4"])
    model = str(save_tiny_model(tmp_path / "model"))
    reward = lambda completions, **k: [0.0] * len(completions)  # noqa: E731
    config = PolyEPOConfig(output_dir=str(tmp_path / "out"), use_cpu=True, report_to="none", num_generations=4)
    trainer = PolyEPOTrainer(
        model=model, reward_funcs=reward, args=config, train_dataset=toy_dataset(), method="pooled_size"
    )
    assert trainer.method_settings == Pool(3) and "pool_size 3 (fitted" in trainer.start_line
