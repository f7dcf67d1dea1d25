"""Batch exploration, as described in "Outcome-based Exploration for LLM Reasoning" (Song, Kempe and Munos 2025,
arXiv 2509.06941): within a generation batch, an answer produced again and again is penalised, so that the policy
is pushed to spread its rollouts over outcomes. Per rollout i with outcome a_i (its judge's cluster; with the
default ``answer`` judge, its final answer):

    penalty_i = -(n(a_i) - 1) / (N - 1),

n(a_i) the group's rollouts with the same outcome: 0 for a unique outcome, -1 when the whole group repeats it. It is a
reward column of its own, ``repetition_penalty``, weighted by ``outcome_batch_coef``, with GRPO's advantage computed
on the total (as GRPO+DIV's bonus). The history-based half of that paper is ``novelty``.

The paper leaves these choices open; each is a setting:

- ``outcome_batch_coef`` (default 0.5, GRPO+DIV's lambda on the same scale): the penalty's weight.
- ``outcome_batch_scope`` (default ``correct``): which rollouts are penalised and counted, ``correct`` (at or above
  ``correct_reward_threshold``: repeating a right answer is what collapses diversity) or ``all`` (every rollout with
  an outcome). Degenerate rollouts are never penalised.

    trainer: outcome_batch
    outcome_batch_coef: 0.5
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from .base import SetBatch, bonus_method
from .papers import OUTCOME_PAPER

OUTCOME_BATCH_SCOPES = ("correct", "all")


@dataclass
class OutcomeBatchSettings:
    """Batch exploration's choices the paper leaves open."""

    outcome_batch_coef: float = field(
        default=0.5, metadata={"help": "The weight of the repetition penalty column: reward + coef x penalty."}
    )
    outcome_batch_scope: str = field(
        default="correct",
        metadata={
            "help": f"One of {OUTCOME_BATCH_SCOPES}: the rollouts penalised and counted for repeating an outcome, "
            "'correct' (at or above correct_reward_threshold) or 'all' (every rollout with an outcome)."
        },
    )

    def check(self) -> None:
        if not self.outcome_batch_coef >= 0:
            raise ValueError(f"outcome_batch_coef={self.outcome_batch_coef}: the penalty's weight must be >= 0.")
        if self.outcome_batch_scope not in OUTCOME_BATCH_SCOPES:
            raise ValueError(f"outcome_batch_scope={self.outcome_batch_scope!r}: use one of {OUTCOME_BATCH_SCOPES}.")


def repetition_penalty(counts: torch.Tensor, counted: torch.Tensor) -> torch.Tensor:
    """-(n(a_i) - 1) / (N - 1) for each ``counted`` rollout [G, N], ``counts`` its n(a_i) among the ``counted``
    ones; 0 elsewhere."""
    n = counts.shape[1]
    repeats = counts.to(torch.float64) - 1
    return torch.where(counted, -repeats / max(n - 1, 1), torch.zeros_like(repeats))


@bonus_method(
    "outcome_batch",
    column="repetition_penalty",
    weight="outcome_batch_coef",
    settings=OutcomeBatchSettings,
    label="Batch exploration",
    describe=lambda s: (
        f"- Batch exploration: reward - {s.outcome_batch_coef:g} (n(answer) - 1) / (N - 1) over "
        f"{s.outcome_batch_scope} rollouts (as described in Song et al. 2025)."
    ),
    tags=("outcome-based-exploration",),
    paper=OUTCOME_PAPER,
)
def outcome_batch(batch: SetBatch, settings: OutcomeBatchSettings) -> torch.Tensor:
    counted = batch.outcomes(correct_only=settings.outcome_batch_scope == "correct")
    return repetition_penalty(batch.cluster_sizes(among=counted), counted)
