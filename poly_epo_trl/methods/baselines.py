"""The paper's baselines: Dr.GRPO (GRPO's own advantage under the paper's settings, no judge) and GRPO+DIV (GRPO on
reward + lambda (N / |cluster(y)| - 1) / (N - 1), the bonus a reward column of its own, ``diversity_bonus``)."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from ..advantages import diversity_bonus
from .base import METHODS, Method, SetBatch, bonus_method
from .poly_epo import POLY_EPO_PAPER

GRPO = METHODS.register("grpo")(Method("grpo", "none", needs_judge=False, label="Dr. GRPO"))
"""GRPO's own advantage, untouched: the Dr.GRPO baseline under the paper's settings. No judge."""


@dataclass
class DiversitySettings:
    """The weight of a diversity bonus's reward column (GRPO+DIV's, the novelty bonus's)."""

    diversity_coef: float = field(
        default=0.5,
        metadata={"help": "lambda, the weight of the bonus column: reward + lambda x bonus. Paper: 0.5 (GRPO+DIV)."},
    )

    def check(self) -> None:
        if self.diversity_coef < 0:
            raise ValueError(f"diversity_coef must be non-negative, got {self.diversity_coef}.")


def describe_bonus(settings: DiversitySettings) -> str:
    return f"- Diversity bonus: reward + {settings.diversity_coef:g} (N / |cluster(y)| - 1) / (N - 1)."


@bonus_method(
    "grpo_div",
    column="diversity_bonus",
    weight="diversity_coef",
    settings=DiversitySettings,
    label="GRPO+DIV",
    describe=describe_bonus,
    tags=("grpo-div",),
    paper=POLY_EPO_PAPER,
)
def grpo_div(batch: SetBatch, settings: DiversitySettings) -> torch.Tensor:
    """(N / |cluster(y)| - 1) / (N - 1) per rollout, 0 for degenerate ones; weighted by ``diversity_coef``."""
    return diversity_bonus(batch.cluster_ids, 1.0, batch.degenerate_cluster_id)
