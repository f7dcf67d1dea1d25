import math

import pytest
import torch
from tiny import row_keys, save_tiny_model, small_settings, toy_dataset
from transformers import AutoModelForCausalLM, AutoTokenizer

from poly_epo_trl import GRPODivTrainer, PolyEPOConfig, PolyEPOTrainer, marginal_set_advantages
from poly_epo_trl.tasks.sum_pair import pair_judge, sum_pair_reward


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return save_tiny_model(tmp_path_factory.mktemp("tiny"))


def config(tmp_path, **overrides):
    return PolyEPOConfig(**settings(tmp_path, **overrides))


def settings(tmp_path, **overrides) -> dict:
    changed = dict(gradient_accumulation_steps=2, max_completion_length=6, learning_rate=1e-3)
    return small_settings(tmp_path / "out", **{**changed, **overrides})


class RecordingTrainer(PolyEPOTrainer):
    """Observes what the loss receives (completion texts and advantages); the computation is PolyEPOTrainer's."""

    def _compute_loss(self, model, inputs):
        self.seen = getattr(self, "seen", [])
        self.seen.append(
            (row_keys(self.processing_class, inputs), inputs["advantages"].detach().clone(), self.last_set_batch)
        )
        return super()._compute_loss(model, inputs)


def assert_loss_saw_batch_advantages(seen_rows, batch):
    """Each row the loss saw carries the set advantage of its completion (same prompt and text, same advantage)."""
    by_text = {}
    keys = zip(batch.prompts, batch.completions, strict=True)
    for text, advantage in zip(keys, batch.advantages.flatten().tolist(), strict=True):
        by_text.setdefault(text, set()).add(round(advantage, 6))
    assert all(len(values) == 1 for values in by_text.values())
    for texts, advantages in seen_rows:
        for text, advantage in zip(texts, advantages.tolist(), strict=True):
            assert by_text[text] == {round(advantage, 6)}


def digit_fraction(prompts, completions, **kwargs):
    """A dense reward, so that an untrained model already gets non-zero advantages."""
    return [sum(ch.isdigit() for ch in c) / max(len(c), 1) for c in completions]


def test_a_few_steps_end_to_end_and_the_loss_sees_set_advantages(model_dir, tmp_path):
    trainer = RecordingTrainer(
        model=str(model_dir),
        reward_funcs=digit_fraction,
        args=config(tmp_path),
        train_dataset=toy_dataset(),
        processing_class=AutoTokenizer.from_pretrained(model_dir),
        judge="answer:text",
    )
    before = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    trainer.train()
    assert len(trainer.seen) == 4  # 2 steps x 2 accumulation micro-batches
    batches = {id(batch): batch for _, _, batch in trainer.seen}
    assert len(batches) == 2
    for batch in batches.values():
        expected = marginal_set_advantages(batch.rewards, batch.cluster_ids, 4)
        torch.testing.assert_close(batch.advantages, expected)
        rows = [(texts, adv) for texts, adv, b in trainer.seen if b is batch]
        assert sum(len(texts) for texts, _ in rows) == 16
        assert_loss_saw_batch_advantages(rows, batch)
    changed = any(not torch.equal(before[n], p) for n, p in trainer.model.named_parameters())
    history = trainer.state.log_history
    logged = [h for h in history if "poly_epo/distinct_clusters" in h]
    assert logged and all(0 <= h["poly_epo/degenerate_frac"] <= 1 for h in logged)
    assert all(h["judge/groups"] == 2 for h in logged)
    assert all(math.isfinite(h["poly_epo/set_score"]) for h in logged)
    for h in logged:  # a step's wall clock split: the rollout holds the generation; the advantages come after it
        assert 0 < h["time/generation"] <= h["time/rollout"] and h["time/advantage"] > 0
    assert all(batch.advantages.abs().sum() > 0 for batch in batches.values())
    assert changed


def test_completions_table_logs_the_set_advantages(model_dir, tmp_path):
    trainer = PolyEPOTrainer(
        model=str(model_dir),
        reward_funcs=sum_pair_reward,
        args=config(tmp_path, max_steps=1, log_completions=True),
        train_dataset=toy_dataset(),
        processing_class=AutoTokenizer.from_pretrained(model_dir),
        judge="answer:text",
    )
    trainer.train()
    logged = list(trainer._logs["advantages"])
    assert logged == pytest.approx(trainer.last_set_batch.advantages.flatten().tolist())


def test_rewards_that_always_succeed_on_one_answer_give_zero_advantage(model_dir, tmp_path):
    def always_one(prompts, completions, **kwargs):
        return [1.0] * len(prompts)

    trainer = PolyEPOTrainer(
        model=str(model_dir),
        reward_funcs=always_one,
        args=config(tmp_path, max_steps=1),
        train_dataset=toy_dataset(),
        processing_class=AutoTokenizer.from_pretrained(model_dir),
        judge=lambda prompt, completions: [0] * len(completions),
    )
    trainer.train()
    assert trainer.last_set_batch.advantages.abs().max() < 1e-7


def test_unscorable_rows_get_zero_advantage(model_dir, tmp_path):
    def half_unscorable(prompts, completions, **kwargs):
        return [None if i % 2 else 1.0 for i in range(len(prompts))]

    trainer = PolyEPOTrainer(
        model=str(model_dir),
        reward_funcs=half_unscorable,
        args=config(tmp_path, max_steps=1),
        train_dataset=toy_dataset(),
        processing_class=AutoTokenizer.from_pretrained(model_dir),
        judge="distinct",
    )
    trainer.train()
    batch = trainer.last_set_batch
    assert torch.isnan(batch.rewards[:, 1::2]).all()
    assert (batch.advantages[:, 1::2] == 0).all()


def test_grpo_div_adds_the_bonus_as_a_weighted_reward(model_dir, tmp_path):
    trainer = GRPODivTrainer(
        model=str(model_dir),
        reward_funcs=sum_pair_reward,
        args=config(tmp_path, max_steps=1, diversity_coef=0.25, log_completions=True),
        train_dataset=toy_dataset(),
        processing_class=AutoTokenizer.from_pretrained(model_dir),
        judge="distinct",
    )
    trainer.train()
    assert trainer.reward_func_names == ["sum_pair_reward", "diversity_bonus"]
    bonus = trainer._logs["rewards"]["diversity_bonus"]
    assert bonus and all(b == pytest.approx(1.0) for b in bonus)  # every completion its own cluster
    assert torch.equal(trainer.reward_weights, torch.tensor([1.0, 0.25]))


def test_resume_from_checkpoint(model_dir, tmp_path):
    args = config(tmp_path, max_steps=2, save_strategy="steps", save_steps=1)
    kwargs = dict(
        model=str(model_dir),
        reward_funcs=sum_pair_reward,
        train_dataset=toy_dataset(),
        processing_class=AutoTokenizer.from_pretrained(model_dir),
        judge=pair_judge,
    )
    PolyEPOTrainer(args=args, **kwargs).train()
    resumed = PolyEPOTrainer(args=config(tmp_path, max_steps=3, save_strategy="no"), **kwargs)
    resumed.train(resume_from_checkpoint=str(tmp_path / "out" / "checkpoint-2"))
    assert resumed.state.global_step == 3


def test_lora_and_num_iterations(model_dir, tmp_path):
    from peft import LoraConfig

    model = AutoModelForCausalLM.from_pretrained(model_dir)
    trainer = RecordingTrainer(
        model=model,
        reward_funcs=sum_pair_reward,
        args=config(tmp_path, max_steps=2, num_iterations=2, learning_rate=1e-2),
        train_dataset=toy_dataset(),
        processing_class=AutoTokenizer.from_pretrained(model_dir),
        judge=pair_judge,
        peft_config=LoraConfig(r=4, target_modules=["q_proj", "v_proj"], task_type="CAUSAL_LM"),
    )
    trainer.train()
    # num_iterations=2 reuses one generation batch for two optimiser steps: one judged batch for both.
    assert len({id(batch) for _, _, batch in trainer.seen}) == 1
    assert any("lora" in n for n, p in trainer.model.named_parameters() if p.requires_grad)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"scale_rewards": "std"}, "scale_rewards='std'"),
        ({"multi_objective_aggregation": "normalize_then_sum"}, "would invert it"),
    ],
)
def test_config_rejects_impossible_settings(tmp_path, overrides, message):
    with pytest.raises(ValueError, match=message):
        config(tmp_path, **overrides)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"set_size": 0}, "at least"),
        ({"set_objective": "diverse"}, "Unknown set_objective"),
        ({"set_objective": "math:nope"}, "could not be imported"),
        ({"set_reduction": "max"}, "set_reduction"),
        ({"set_estimator": "exact"}, "set_estimator"),
        ({"diversity_gate": True, "set_objective": "mean"}, "diversity_gate"),
        ({"set_objective": "math:hypot", "set_estimator": "closed_form"}, "closed_form"),
        ({"set_size": "4"}, "set_size='4' is str"),
    ],
)
def test_the_methods_own_settings_are_checked_once_by_its_resolver(tmp_path, model_dir, overrides, message):
    """A built-in method's setting on a PolyEPOConfig is held to the method's type and range when the trainer knows
    its method (the config alone cannot: another method may own a field of that name), before the model loads, and
    the error names the method."""
    args = config(tmp_path, **overrides)
    with pytest.raises(ValueError, match=rf"Method 'poly_epo': .*{message}"):
        PolyEPOTrainer(model=str(model_dir), reward_funcs=sum_pair_reward, args=args, train_dataset=toy_dataset())


def test_config_defaults_are_the_papers(tmp_path):
    args = PolyEPOConfig(output_dir=str(tmp_path), use_cpu=True, report_to="none")
    assert (args.num_generations, args.set_size, args.loss_type, args.scale_rewards) == (8, 4, "dr_grpo", "none")
    assert (args.beta, args.epsilon, args.epsilon_high, args.temperature) == (0.0, 0.2, 0.28, 1.0)
    assert args.learning_rate == 1e-6
    assert (args.set_objective, args.set_reduction, args.diversity_gate) == ("polychromic", "mean", False)


def test_trainer_demands_a_judge_and_a_grpo_config(model_dir, tmp_path):
    from transformers import TrainingArguments

    with pytest.raises(ValueError, match="needs a clustering judge"):
        PolyEPOTrainer(model=str(model_dir), reward_funcs=sum_pair_reward, args=config(tmp_path))
    with pytest.raises(TypeError, match=r"needs args=GRPOConfig\(...\)"):
        PolyEPOTrainer(
            model=str(model_dir),
            reward_funcs=sum_pair_reward,
            args=TrainingArguments(output_dir=str(tmp_path), use_cpu=True, report_to="none"),
            judge="answer",
        )


def test_positional_arguments_are_read_by_name(model_dir, tmp_path):
    """GRPOTrainer's arguments given by position are bound to its signature once and then read by name: the config
    in third place is the run's, the dataset in fourth place is checked (a column its reward reads is missing), and
    an argument GRPOTrainer does not take is TRL's TypeError."""

    def needs_target(completions, target, **kwargs):
        return [0.0 for _ in completions]

    args = config(tmp_path, set_size=2)
    trainer = PolyEPOTrainer(str(model_dir), sum_pair_reward, args, toy_dataset(), judge="answer")
    assert trainer.args is args and trainer.settings.set_size == 2
    with pytest.raises(Exception, match="reads the column 'target'"):
        PolyEPOTrainer(str(model_dir), needs_target, args, toy_dataset(), judge="answer")
    with pytest.raises(TypeError, match="too many positional arguments"):
        PolyEPOTrainer(str(model_dir), sum_pair_reward, args, *[None] * 16, judge="answer")


def evaluating_trainer(trainer_cls, model_dir, tmp_path, judge, eval_batch: int, num_generations_eval: int):
    """A trainer that trains one step and evaluates after it on 4 held-out prompts."""
    return trainer_cls(
        model=str(model_dir),
        reward_funcs=digit_fraction,
        args=config(
            tmp_path,
            max_steps=1,
            eval_strategy="steps",
            eval_steps=1,
            per_device_eval_batch_size=eval_batch,
            num_generations_eval=num_generations_eval,
        ),
        train_dataset=toy_dataset(),
        eval_dataset=toy_dataset(range(40, 44)),
        processing_class=AutoTokenizer.from_pretrained(model_dir),
        judge=judge,
    )


def test_eval_mode_computes_set_advantages_and_logs_eval_metrics(model_dir, tmp_path):
    trainer = evaluating_trainer(PolyEPOTrainer, model_dir, tmp_path, "answer:text", 12, 6)
    trainer.train()
    batch = trainer.last_set_batch
    assert batch.mode == "eval" and batch.rewards.shape == (2, 6)
    torch.testing.assert_close(batch.advantages, marginal_set_advantages(batch.rewards, batch.cluster_ids, 4))
    evals = [h for h in trainer.state.log_history if "eval_poly_epo/distinct_clusters" in h]
    assert evals and evals[0]["eval_judge/groups"] == 2  # per eval batch of 12 rows, averaged over 2 batches


def infinite_sometimes(prompts, completions, **kwargs):
    """+inf, -inf or a digit fraction: a reward function with a bug, as one writes them."""
    values = digit_fraction(prompts, completions)
    return [math.inf if i % 5 == 0 else -math.inf if i % 7 == 0 else v for i, v in enumerate(values)]


@pytest.mark.parametrize("trainer_name", ["poly_epo", "grpo_div", "grpo"])
def test_infinite_rewards_count_as_not_scored_and_never_reach_the_weights(model_dir, tmp_path, trainer_name, caplog):
    from trl import GRPOConfig

    from poly_epo_trl.trainer import DrGRPOTrainer

    common = dict(model=str(model_dir), reward_funcs=[infinite_sometimes, digit_fraction], train_dataset=toy_dataset())
    if trainer_name == "grpo":
        grpo_settings = {k: v for k, v in settings(tmp_path).items() if k != "set_size"}
        trainer = DrGRPOTrainer(args=GRPOConfig(**grpo_settings, loss_type="dr_grpo"), **common)
    else:
        cls = PolyEPOTrainer if trainer_name == "poly_epo" else GRPODivTrainer
        trainer = cls(args=config(tmp_path), judge="answer:text", **common)
    with caplog.at_level("WARNING"):
        trainer.train()
    assert all(torch.isfinite(p).all() for p in trainer.model.parameters())
    logged = [entry for entry in trainer.state.log_history if "rewards/non_finite" in entry]
    assert logged and all(entry["rewards/non_finite"] > 0 for entry in logged)
    assert all(math.isfinite(entry["loss"]) and math.isfinite(entry["grad_norm"]) for entry in logged)
    assert "infinite_sometimes" in caplog.text and "not scored" in caplog.text


def test_grpo_div_keeps_each_task_reward_weight_and_the_bonus_apart(model_dir, tmp_path):
    def one(prompts, completions, **kwargs):
        return [1.0] * len(completions)

    def half(prompts, completions, **kwargs):
        return [0.5] * len(completions)

    trainer = GRPODivTrainer(
        model=str(model_dir),
        reward_funcs=[one, half],
        args=config(tmp_path, max_steps=1, reward_weights=[1.0, 2.0], diversity_coef=0.5),
        train_dataset=toy_dataset(),
        judge="answer:text",
    )
    trainer.train()
    assert torch.equal(trainer.last_set_batch.rewards, torch.full_like(trainer.last_set_batch.rewards, 2.0))
    assert trainer.reward_weights.tolist() == [1.0, 2.0, 0.5]
    entry = next(e for e in trainer.state.log_history if "rewards/one/mean" in e)
    assert entry["rewards/one/mean"] == 1.0 and entry["rewards/half/mean"] == 0.5
    assert 0 <= entry["rewards/diversity_bonus/mean"] <= 1


class CountingJudge:
    """A plain judge function that records the groups it was asked about."""

    def __init__(self):
        self.groups = []

    def __call__(self, prompt, completions):
        self.groups.append(len(completions))
        return list(range(len(completions)))


def test_trainer_without_args_builds_a_default_config(model_dir, tmp_path, monkeypatch):
    """As GRPOTrainer builds GRPOConfig('<model>-GRPO'): PolyEPOConfig('<model>-Poly-EPO') with the answer judge."""
    import transformers.training_args
    from trl import GRPOTrainer

    from poly_epo_trl.judges.answer import AnswerJudge

    monkeypatch.chdir(tmp_path)
    # GRPOConfig's default bf16 needs a GPU (or use_cpu): construct as on the GPU machine TRL's minimal example targets
    monkeypatch.setattr(transformers.training_args, "is_torch_bf16_gpu_available", lambda: True)
    grpo = GRPOTrainer(model=str(model_dir), reward_funcs=digit_fraction, train_dataset=toy_dataset())
    assert grpo.args.output_dir.endswith(f"{model_dir.name}-GRPO")
    trainer = PolyEPOTrainer(model=str(model_dir), reward_funcs=digit_fraction, train_dataset=toy_dataset())
    assert isinstance(trainer.args, PolyEPOConfig) and trainer.args.output_dir.endswith(f"{model_dir.name}-Poly-EPO")
    assert isinstance(trainer.judge, AnswerJudge) and trainer.args.judge == "answer"
    judge = CountingJudge()
    div = GRPODivTrainer(str(model_dir), digit_fraction, None, train_dataset=toy_dataset(), judge=judge)
    assert div.args.output_dir.endswith("-GRPO-DIV") and div.args.judge is None
    assert div.judge.where() and div.args.scale_rewards == "none"


@pytest.mark.parametrize("trainer_cls", [PolyEPOTrainer, GRPODivTrainer])
def test_evaluation_with_one_generation_per_prompt(trainer_cls, model_dir, tmp_path):
    """num_generations_eval=1: groups of one have advantage 0, and the judge is never asked about them."""
    judge = CountingJudge()
    trainer = evaluating_trainer(trainer_cls, model_dir, tmp_path, judge, 4, 1)
    trainer.train()
    batch = trainer.last_set_batch
    assert batch.mode == "eval" and batch.rewards.shape == (4, 1)
    assert set(judge.groups) == {8}  # the training groups only
    if trainer_cls is PolyEPOTrainer:
        assert torch.count_nonzero(batch.advantages) == 0
    assert any("eval_loss" in h for h in trainer.state.log_history)


@pytest.mark.parametrize("scale", ["group", "batch", True])
def test_scale_rewards_divides_the_set_advantages_by_their_std(scale, model_dir, tmp_path):
    from poly_epo_trl.advantages import scale_advantages

    trainer = RecordingTrainer(
        model=str(model_dir),
        reward_funcs=digit_fraction,
        args=config(tmp_path, max_steps=1, scale_rewards=scale),
        train_dataset=toy_dataset(),
        processing_class=AutoTokenizer.from_pretrained(model_dir),
        judge="answer:text",
    )
    assert trainer.args.scale_rewards == ("group" if scale is True else scale)
    trainer.train()
    batch = trainer.last_set_batch
    raw = marginal_set_advantages(batch.rewards, batch.cluster_ids, 4)
    expected = scale_advantages(raw, trainer.args.scale_rewards)
    torch.testing.assert_close(batch.advantages, expected)
    assert batch.advantages.abs().max() > raw.abs().max()  # set advantages are small; the std scales them up
    assert_loss_saw_batch_advantages([(texts, adv) for texts, adv, _ in trainer.seen], batch)
