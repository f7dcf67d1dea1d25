"""PolyEPOTrainer: TRL's GRPOTrainer with the marginal set advantage in place of GRPO's advantage; GRPODivTrainer,
the paper's GRPO+DIV baseline. Both judge their groups through ``judged_groups`` (its docstring names TRL's seams)."""

from __future__ import annotations

import textwrap
from typing import Any, ClassVar

import torch

from ..advantages import diversity_bonus, group_relative_advantages, marginal_set_advantages, scale_advantages
from .config import load_objective
from .judged_groups import SetBatch, _JudgedGroupsTrainer

POLY_EPO_PAPER = {
    "title": "Polychromic Exploratory Policy Optimization",
    "id": "2604.17654",
    "citation": textwrap.dedent("""\
        @article{orney2026polyepo,
            title        = {{Polychromic Exploratory Policy Optimization}},
            author       = {Orney and Hamid and others},
            year         = 2026,
            eprint       = {arXiv:2604.17654},
        }"""),
}


class PolyEPOTrainer(_JudgedGroupsTrainer):
    """GRPOTrainer whose advantage is the marginal set advantage of the judged groups.

    Takes GRPOTrainer's arguments with ``args=PolyEPOConfig(...)``, plus ``judge=``: a ClusteringJudge, any function
    ``judge(prompt: str, completions: list[str]) -> list[int]``, or a judge spec string.
    """

    _tag_names: ClassVar[list[str]] = ["trl", "grpo", "poly-epo"]
    _name = "Poly-EPO"
    _paper = POLY_EPO_PAPER

    def __init__(self, *args: Any, judge: Any = None, **kwargs: Any) -> None:
        super().__init__(*args, judge=judge, **kwargs)
        self.set_objective = load_objective(self.settings.set_objective)
        self._pending_advantages: torch.Tensor | None = None

    def method_lines(self) -> list[str]:
        settings = self.settings
        gate = ", diversity gate on" if settings.diversity_gate else ""
        return [
            f"- Set RL: sets of n = {settings.set_size} of each group, objective `{settings.set_objective}`, "
            f"marginal set advantage with `set_reduction={settings.set_reduction}`{gate}."
        ]

    def compute_set_advantages(self, rewards: torch.Tensor, cluster_ids: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """Marginal set advantages [G, N] and mean set values [G] under this trainer's settings. A group no larger
        than ``set_size`` (evaluation with fewer generations) is a single set: its advantages are 0."""
        args = self.settings
        return marginal_set_advantages(
            rewards,
            cluster_ids,
            min(args.set_size, rewards.shape[1]),
            objective=self.set_objective,
            reduction=args.set_reduction,
            gate=args.diversity_gate,
            degenerate_cluster_id=args.degenerate_cluster_id,
            estimator=args.set_estimator,
            num_sampled_sets=args.num_sampled_sets,
            max_enumerated_sets=args.max_enumerated_sets,
            return_baseline=True,
        )

    def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):
        rewards_per_func = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
        batch = self._judged_rewards(rewards_per_func, prompts, completions)
        advantages, set_values = self.compute_set_advantages(batch.rewards, batch.cluster_ids)
        advantages = self._apply_fallbacks(advantages, batch)
        advantages = scale_advantages(advantages, self.args.scale_rewards, ~torch.isnan(batch.rewards))
        batch.advantages = advantages
        self.last_set_batch = batch
        self._pending_advantages = advantages.flatten()
        self._log_diversity(batch)
        self._show_verdicts(batch, len(prompts))
        metrics = self._metrics[batch.mode]
        metrics["poly_epo/set_score"].append(torch.nanmean(set_values).item())
        metrics["poly_epo/advantage_abs_mean"].append(advantages.abs().mean().item())
        metrics["poly_epo/advantage_std"].append(advantages.std().item())
        metrics["poly_epo/advantage_max"].append(advantages.max().item())
        metrics["poly_epo/advantage_min"].append(advantages.min().item())
        return rewards_per_func

    def _apply_fallbacks(self, advantages: torch.Tensor, batch: SetBatch) -> torch.Tensor:
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

    def _generate_and_score_completions(self, inputs):
        output = super()._generate_and_score_completions(inputs)
        advantages, self._pending_advantages = self._pending_advantages, None
        local = output["advantages"]
        start = self.accelerator.process_index * len(local)
        output["advantages"] = advantages[start : start + len(local)].to(device=local.device, dtype=local.dtype)
        logged = self._logs["advantages"]
        for _ in range(min(len(advantages), len(logged))):
            logged.pop()
        logged.extend(advantages.tolist())
        return output


class GRPODivTrainer(_JudgedGroupsTrainer):
    """The paper's GRPO+DIV baseline: Dr.GRPO on reward + lambda (N / |cluster(y)| - 1) / (N - 1).

    The bonus is a reward column of its own, ``diversity_bonus`` with weight lambda (``args.diversity_coef``), so
    GRPO's advantage, the reward metrics and the completions table all include it.
    """

    default_output_suffix = "GRPO-DIV"
    _tag_names: ClassVar[list[str]] = ["trl", "grpo", "grpo-div"]
    _name = "GRPO+DIV"
    _paper = POLY_EPO_PAPER  # the baseline is defined in the Poly-EPO paper

    def __init__(self, *args: Any, judge: Any = None, **kwargs: Any) -> None:
        super().__init__(*args, judge=judge, **kwargs)
        self.reward_funcs.append(_diversity_bonus_placeholder)
        self.reward_func_names.append("diversity_bonus")
        self.reward_processing_classes.append(None)
        bonus_weight = torch.tensor([self.settings.diversity_coef], dtype=self.reward_weights.dtype)
        self.reward_weights = torch.cat([self.reward_weights, bonus_weight.to(self.reward_weights.device)])

    def method_lines(self) -> list[str]:
        return [
            f"- Diversity bonus: reward + {self.settings.diversity_coef:g} (N / |cluster(y)| - 1) / (N - 1), "
            "with GRPO's advantage."
        ]

    def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):
        rewards_per_func = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
        task_rewards = rewards_per_func[:, :-1]
        batch = self._judged_rewards(task_rewards, prompts, completions)
        bonus = diversity_bonus(batch.cluster_ids, 1.0, self.settings.degenerate_cluster_id)
        for g, fallback in enumerate(batch.fallbacks):
            if fallback in ("grpo", "skip"):  # no clusters to reward: the plain reward, as in GRPO
                bonus[g] = 0.0
        bonus = bonus.flatten()
        scored = ~torch.isnan(task_rewards).all(dim=1)
        rewards_per_func[:, -1] = torch.where(scored, bonus.to(rewards_per_func.dtype), torch.nan)
        self._log_diversity(batch)
        self._show_verdicts(batch, len(prompts))
        self.last_set_batch = batch
        return rewards_per_func


def _diversity_bonus_placeholder(prompts: list, **kwargs: Any) -> list[None]:
    """Stands in the reward list for the bonus, which GRPODivTrainer fills in from the judged groups."""
    return [None] * len(prompts)
