"""The paper's baselines: Dr.GRPO (GRPO's own advantage under the paper's settings, no judge) and GRPO+DIV (GRPO on
reward + lambda (N / |cluster(y)| - 1) / (N - 1), the bonus a reward column of its own, ``diversity_bonus``)."""

from __future__ import annotations

from typing import Any

import torch

from ..advantages import diversity_bonus
from .base import METHODS, Method, SetBatch, bonus_method
from .poly_epo import POLY_EPO_PAPER

GRPO = METHODS.register("grpo")(Method("grpo", "none", needs_judge=False, uses=(), label="Dr. GRPO"))
"""GRPO's own advantage, untouched: the Dr.GRPO baseline under the paper's settings. No judge."""


def describe_bonus(settings: Any) -> str:
    return f"- Diversity bonus: reward + {settings.diversity_coef:g} (N / |cluster(y)| - 1) / (N - 1)."


@bonus_method(
    "grpo_div",
    column="diversity_bonus",
    weight="diversity_coef",
    uses=("diversity_coef", "degenerate_cluster_id"),
    label="GRPO+DIV",
    describe=describe_bonus,
    tags=("grpo-div",),
    paper=POLY_EPO_PAPER,
)
def grpo_div(batch: SetBatch, settings: Any) -> torch.Tensor:
    """(N / |cluster(y)| - 1) / (N - 1) per rollout, 0 for degenerate ones; weighted by ``diversity_coef``."""
    return diversity_bonus(batch.cluster_ids, 1.0, settings.degenerate_cluster_id)
