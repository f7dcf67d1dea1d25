"""A recipe's held-out evaluation wired to its trainer: the scoring and sampling of its ``eval_dataset_name`` rows
as the recipe's rewards and judge score them, its agent's episodes, the in-training callback and the final summary."""

from __future__ import annotations

from typing import Any

from ..evaluation.callback import PassAtKCallback
from ..evaluation.episodes import Agent
from ..evaluation.sampling import SamplingSettings
from ..evaluation.scoring import Scorer
from ..trainer import PolyEPOConfig
from .training import ScriptArguments, TrainingParts


def held_out_scoring(
    parts: TrainingParts,
    training_args: PolyEPOConfig,
    num_samples: int,
    seed: int | None = None,
    vote_answer: str = "auto",
) -> tuple[Scorer, SamplingSettings]:
    """How held-out problems are evaluated: the recipe's rewards, reward weights and judge, majority vote by
    ``vote_answer``, and ``num_samples`` samples per problem at its completion length and temperature, seeded with
    ``seed`` (default: the recipe's)."""
    settings = SamplingSettings(
        num_samples=num_samples,
        max_new_tokens=training_args.max_completion_length,
        temperature=training_args.temperature,
        seed=training_args.seed if seed is None else seed,
    )
    return Scorer(parts.reward_funcs, training_args.reward_weights, parts.judge, vote_answer), settings


def held_out_agent(parts: TrainingParts, training_args: PolyEPOConfig) -> Agent | None:
    """How held-out episodes are played, as training plays them (None for a plain policy)."""
    if not parts.agent:
        return None
    factory, tools = parts.agent.get("environment_factory"), parts.agent.get("tools", [])
    return Agent(factory, tools, training_args.max_tool_calling_iterations)


def held_out_summary(trainer: Any, parts: TrainingParts, samples: int, parsed: tuple, seed: int) -> dict[str, Any]:
    """``evaluation.report.summarize`` of ``samples`` per held-out problem of ``parts`` (a recipe's
    ``eval_dataset_name``) by ``trainer``'s model, sampled with ``seed`` and scored as the recipe's in-training
    evaluation scores (its rewards, judge and majority vote; ``parsed``: the recipe's three configs); for an agent,
    episodes played as training plays them."""
    from ..evaluation.episodes import EpisodeSampler
    from ..evaluation.report import summarize
    from ..evaluation.runner import episode_metrics, policy_metrics

    script_args, config, _ = parsed
    rows, indices = parts.eval_rows, range(len(parts.eval_rows))
    scorer, settings = held_out_scoring(parts, config, samples, seed, script_args.eval_vote_answer)
    agent, threshold = held_out_agent(parts, config), config.correct_reward_threshold
    if agent is None:
        metrics = policy_metrics(trainer.model, trainer.processing_class, rows, indices, scorer, settings, threshold)
    else:
        sampler = EpisodeSampler.for_trainer(trainer, settings, agent)
        metrics = episode_metrics(sampler, rows, indices, scorer, threshold)
    return summarize(metrics, num_resamples=200)


def pass_at_k_callback(
    trainer: Any, parts: TrainingParts, script_args: ScriptArguments, training_args: PolyEPOConfig
) -> PassAtKCallback:
    """The in-training evaluation on ``parts.eval_rows`` with the recipe's rewards, judge and sampling."""
    scorer, settings = held_out_scoring(
        parts, training_args, script_args.eval_num_samples, vote_answer=script_args.eval_vote_answer
    )
    return PassAtKCallback(
        trainer,
        parts.eval_rows,
        scorer,
        settings,
        int(training_args.eval_steps),
        training_args.correct_reward_threshold,
        on_start=script_args.eval_at_start,
        agent=held_out_agent(parts, training_args),
    )
