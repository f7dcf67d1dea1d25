"""The advantage a trainer trains on, one registered method each, as verl registers its advantage estimators and as
recipes name them (``trainer: poly_epo | grpo_div | grpo``):

- ``poly_epo``: the marginal set advantage of the judged groups (``advantages.marginal_set_advantages``) replaces
  GRPO's advantage;
- ``grpo_div``: the paper's GRPO+DIV baseline, GRPO's advantage of reward + lambda (N / |cluster(y)| - 1) / (N - 1);
- ``grpo``: GRPO's own advantage (the Dr.GRPO baseline with the paper's settings); no judge.

A method is the one place a step's judged groups become what the loss sees. To try another advantage, register a
``TrainingMethod`` under a new name and train with ``PolyEPOTrainer(..., method="name")`` (or ``trainer: name``).
"""

from __future__ import annotations

from typing import Any, ClassVar

import torch

from ..advantages import diversity_bonus, group_relative_advantages, marginal_set_advantages, scale_advantages
from ..registry import Registry
from .config import PolyEPOSettings, load_objective
from .step import SetBatch, Step


class TrainingMethod:
    """How a step's rewards ([B, R], all processes) and judged groups become the update.

    ``needs_judge``: whether the trainer judges its groups. ``apply`` returns the rewards TRL goes on with, and may
    set ``step.advantages`` (all processes' rows, flat) to replace GRPO's advantage. ``install`` adapts the trainer
    once, after GRPOTrainer built it."""

    needs_judge: ClassVar[bool] = True
    card_name: ClassVar[str] = "Poly-EPO"

    def install(self, trainer: Any) -> None:
        """Nothing to adapt."""

    def apply(
        self, trainer: Any, step: Step, rewards: torch.Tensor, host: torch.Tensor, prompts: list, completions: list
    ) -> torch.Tensor:
        """The rewards TRL goes on with (``rewards`` on the device; ``host``, their copy, for the bookkeeping,
        which stays on the host: no read of the device here)."""
        return rewards

    def card_lines(self, settings: PolyEPOSettings) -> list[str]:
        """What the method does, for the model card."""
        return []


METHODS: Registry[type[TrainingMethod]] = Registry("trainer")


@METHODS.register("poly_epo")
class SetAdvantage(TrainingMethod):
    """Poly-EPO: each rollout's marginal set advantage over its judged group, scaled as ``scale_rewards`` asks;
    a group the judge could not cluster gets Dr.GRPO's advantage (``judge_fallback: grpo``) or none (``skip``)."""

    def apply(
        self, trainer: Any, step: Step, rewards: torch.Tensor, host: torch.Tensor, prompts: list, completions: list
    ) -> torch.Tensor:
        settings = trainer.settings
        batch = trainer.judging.judged_batch(step, host, prompts, completions)
        advantages, set_values = self.advantages(batch.rewards, batch.cluster_ids, settings)
        advantages = apply_fallbacks(advantages, batch)
        advantages = scale_advantages(advantages, trainer.args.scale_rewards, ~torch.isnan(batch.rewards))
        batch.advantages = advantages
        step.batch, step.advantages = batch, advantages.flatten()
        trainer.judging.show(batch, len(prompts))
        metrics = trainer._metrics[batch.mode]
        metrics["poly_epo/set_score"].append(torch.nanmean(set_values).item())
        metrics["poly_epo/advantage_abs_mean"].append(advantages.abs().mean().item())
        metrics["poly_epo/advantage_std"].append(advantages.std().item())
        metrics["poly_epo/advantage_max"].append(advantages.max().item())
        metrics["poly_epo/advantage_min"].append(advantages.min().item())
        return rewards

    @staticmethod
    def advantages(
        rewards: torch.Tensor, cluster_ids: torch.Tensor, settings: PolyEPOSettings
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Marginal set advantages [G, N] and mean set values [G] under ``settings``. A group no larger than
        ``set_size`` (evaluation with fewer generations) is a single set: its advantages are 0."""
        return marginal_set_advantages(
            rewards,
            cluster_ids,
            min(settings.set_size, rewards.shape[1]),
            objective=load_objective(settings.set_objective),
            reduction=settings.set_reduction,
            gate=settings.diversity_gate,
            degenerate_cluster_id=settings.degenerate_cluster_id,
            estimator=settings.set_estimator,
            num_sampled_sets=settings.num_sampled_sets,
            max_enumerated_sets=settings.max_enumerated_sets,
            return_baseline=True,
        )

    def card_lines(self, settings: PolyEPOSettings) -> list[str]:
        gate = ", diversity gate on" if settings.diversity_gate else ""
        return [
            f"- Set RL: sets of n = {settings.set_size} of each group, objective `{settings.set_objective}`, "
            f"marginal set advantage with `set_reduction={settings.set_reduction}`{gate}."
        ]


def apply_fallbacks(advantages: torch.Tensor, batch: SetBatch) -> torch.Tensor:
    """Groups the judge could not cluster: Dr.GRPO's advantage ("grpo") or none at all ("skip")."""
    if not any(f in ("grpo", "skip") for f in batch.fallbacks):
        return advantages
    advantages = advantages.clone()
    grpo = group_relative_advantages(batch.rewards)
    for g, fallback in enumerate(batch.fallbacks):
        if fallback == "grpo":
            advantages[g] = grpo[g]
        elif fallback == "skip":
            advantages[g] = 0.0
    return advantages


@METHODS.register("grpo_div")
class DiversityBonus(TrainingMethod):
    """GRPO+DIV: GRPO on reward + lambda (N / |cluster(y)| - 1) / (N - 1), lambda = ``diversity_coef``. The bonus is
    a reward column of its own, ``diversity_bonus`` with weight lambda, so GRPO's advantage, the reward metrics and
    the completions table all include it."""

    card_name = "GRPO+DIV"

    def install(self, trainer: Any) -> None:
        """The bonus's column: TRL's reward lists get one more entry, filled in by ``apply``."""
        trainer.reward_funcs.append(_diversity_bonus_placeholder)
        trainer.reward_func_names.append("diversity_bonus")
        trainer.reward_processing_classes.append(None)
        weight = torch.tensor([trainer.settings.diversity_coef], dtype=trainer.reward_weights.dtype)
        trainer.reward_weights = torch.cat([trainer.reward_weights, weight.to(trainer.reward_weights.device)])

    def apply(
        self, trainer: Any, step: Step, rewards: torch.Tensor, host: torch.Tensor, prompts: list, completions: list
    ) -> torch.Tensor:
        batch = trainer.judging.judged_batch(step, host[:, :-1], prompts, completions)
        bonus = diversity_bonus(batch.cluster_ids, 1.0, trainer.settings.degenerate_cluster_id)
        for g, fallback in enumerate(batch.fallbacks):
            if fallback in ("grpo", "skip"):  # no clusters to reward: the plain reward, as in GRPO
                bonus[g] = 0.0
        scored = ~torch.isnan(rewards[:, :-1]).all(dim=1)  # on the device, not read
        bonus = bonus.flatten().to(device=rewards.device, dtype=rewards.dtype)
        rewards[:, -1] = torch.where(scored, bonus, torch.nan)
        trainer.judging.show(batch, len(prompts))
        step.batch = batch
        return rewards

    def card_lines(self, settings: PolyEPOSettings) -> list[str]:
        return [f"- Diversity bonus: reward + {settings.diversity_coef:g} (N / |cluster(y)| - 1) / (N - 1)."]


@METHODS.register("grpo")
class GroupRelative(TrainingMethod):
    """GRPO's own advantage, untouched: the Dr.GRPO baseline under the paper's settings. No judge."""

    needs_judge = False
    card_name = "GRPO"


def _diversity_bonus_placeholder(prompts: list, **kwargs: Any) -> list[None]:
    """Stands in the reward list for the bonus, which GRPO+DIV fills in from the judged groups."""
    return [None] * len(prompts)
