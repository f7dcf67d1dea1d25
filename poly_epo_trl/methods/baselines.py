"""The paper's baselines: Dr.GRPO (GRPO's own advantage under the paper's settings, no judge) and GRPO+DIV (GRPO on
reward + lambda (N / |cluster(y)| - 1) / (N - 1), the bonus a reward column of its own, ``diversity_bonus``)."""

from __future__ import annotations

import torch

from ..advantages import diversity_bonus
from .base import METHODS, Method, SetBatch, bonus_method
from .papers import POLY_EPO_PAPER
from .settings import DiversitySettings

GRPO = METHODS.register("grpo")(Method("grpo", "none", needs_judge=False, label="Dr. GRPO"))
"""GRPO's own advantage, untouched: the Dr.GRPO baseline under the paper's settings. No judge."""


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
