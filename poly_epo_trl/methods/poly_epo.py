"""Poly-EPO: each rollout's marginal set advantage over its judged group (``advantages.marginal_set_advantages``)
replaces GRPO's advantage. Sets are all C(N, n) subsets of n = ``set_size`` rollouts, scored by the set objective
(``set_objective``; the paper's polychromic f = mean reward x distinct strategies / n). Its settings:
``SetSettings``."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from ..advantages import BUILTIN_OBJECTIVES, ESTIMATORS, OBJECTIVES, REDUCTIONS, marginal_set_advantages
from .base import SetBatch, advantage_method
from .papers import POLY_EPO_PAPER
from .settings import size_field


@dataclass
class SetSettings:
    """Poly-EPO's own settings: the sets, their objective and how the marginal set advantage is computed. Fields of
    ``PolyEPOConfig`` too (so a recipe's method switches with its ``trainer:`` line alone)."""

    set_size: int = size_field(
        "Set size n; sets are all C(N, n) subsets of a group (left unset: 4, or N - 1 for a group of N <= "
        "4, said in the log). Paper: 4.",
        "a set of one rollout holds no diversity, so Poly-EPO's advantage is Dr.GRPO's on the mean "
        "reward (a degenerate rollout's reward counted as 0); num_generations of 3 or more gives sets of 2",
    )
    set_objective: str = field(
        default="polychromic",
        metadata={
            "help": "Set objective f: 'polychromic' (mean reward x distinct strategies / n), 'pass_at_n' (max "
            "reward), 'mean' (mean reward), or 'package.module:function' for your own f(rewards, cluster_ids) (given "
            "the run's degenerate_cluster_id and correct_reward_threshold where it names them). Paper: polychromic.",
        },
    )
    set_reduction: str = field(
        default="mean",
        metadata={
            "help": "'mean': average set advantage over the sets containing a rollout (the authors' code); 'sum': "
            "the paper's text (mean x C(N-1, n-1)). Paper: mean (code), sum (text).",
        },
    )
    diversity_gate: bool = field(
        default=False,
        metadata={
            "help": "Polychromic only: score sets with a single strategy 0 (the paper's 1[|U| > 1]). "
            "Paper: false (code), true (text).",
        },
    )
    set_estimator: str = field(
        default="auto",
        metadata={"help": "'auto', 'closed_form' (built-in objectives), 'enumerate' or 'sample'."},
    )
    num_sampled_sets: int | None = field(
        default=None, metadata={"help": "Random sets per group for the 'sample' estimator (default 4096)."}
    )
    max_enumerated_sets: int = field(
        default=100_000, metadata={"help": "Largest C(N, n) that 'enumerate' (and 'auto') will enumerate per group."}
    )

    def check(self) -> None:
        """ValueError naming the setting, its value and what to set, for one out of range."""
        if self.set_objective not in BUILTIN_OBJECTIVES:
            OBJECTIVES.get(self.set_objective)  # ValueError naming what can be named
        if self.set_reduction not in REDUCTIONS:
            raise ValueError(f"set_reduction must be one of {REDUCTIONS}, got {self.set_reduction!r}.")
        if self.set_estimator not in ESTIMATORS:
            raise ValueError(f"set_estimator must be one of {ESTIMATORS}, got {self.set_estimator!r}.")
        if self.set_estimator == "closed_form" and self.set_objective not in BUILTIN_OBJECTIVES:
            raise ValueError(
                "set_estimator='closed_form' exists for the built-in objectives only: use 'auto', 'enumerate' or "
                "'sample' with a custom set_objective."
            )
        if self.diversity_gate and self.set_objective != "polychromic":
            raise ValueError("diversity_gate applies to set_objective='polychromic' only: drop it.")
        if self.num_sampled_sets is not None and self.num_sampled_sets < 1:
            raise ValueError(f"num_sampled_sets must be positive, got {self.num_sampled_sets}.")
        if self.max_enumerated_sets < 1:
            raise ValueError(f"max_enumerated_sets must be positive, got {self.max_enumerated_sets}.")


def describe(settings: SetSettings) -> str:
    gate = ", diversity gate on" if settings.diversity_gate else ""
    return (
        f"- Set RL: sets of n = {settings.set_size} of each group, objective `{settings.set_objective}`, "
        f"marginal set advantage with `set_reduction={settings.set_reduction}`{gate}."
    )


@advantage_method(
    "poly_epo",
    settings=SetSettings,
    label="Poly-EPO",
    describe=describe,
    tags=("poly-epo",),
    paper=POLY_EPO_PAPER,
    reads_floor=True,
)
def set_advantage(batch: SetBatch, settings: SetSettings) -> tuple[torch.Tensor, dict[str, float]]:
    """Marginal set advantages [G, N] of the rewards read from the run's floor (``floor``: r - F, the paper's
    objective where every reward is >= 0 and F = 0), and the mean set value of the batch (``set_score``). A group no
    larger than ``set_size`` (an evaluation with fewer generations) is a single set: its advantages are 0."""
    advantages, set_values = marginal_set_advantages(
        batch.floored_rewards(),
        batch.cluster_ids,
        min(settings.set_size, batch.group_size),
        objective=settings.set_objective,
        reduction=settings.set_reduction,
        gate=settings.diversity_gate,
        degenerate_cluster_id=batch.degenerate_cluster_id,
        estimator=settings.set_estimator,
        num_sampled_sets=settings.num_sampled_sets,
        max_enumerated_sets=settings.max_enumerated_sets,
        return_baseline=True,
        correct_reward_threshold=batch.correct_reward_threshold - batch.reward_floor,
    )
    return advantages, {"set_score": torch.nanmean(set_values).item()}
