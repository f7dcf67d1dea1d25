"""Poly-EPO: each rollout's marginal set advantage over its judged group (``advantages.marginal_set_advantages``)
replaces GRPO's advantage. Sets are all C(N, n) subsets of n = ``set_size`` rollouts, scored by the set objective
(``set_objective``; the paper's polychromic f = mean reward x distinct strategies / n)."""

from __future__ import annotations

from typing import Any

import torch

from ..advantages import marginal_set_advantages
from .base import SetBatch, advantage_method

POLY_EPO_PAPER = {
    "title": "Poly-EPO: Training Exploratory Reasoning Models",
    "id": "2604.17654",
    "citation": """\
@article{orney2026polyepo,
    title        = {{Poly-EPO: Training Exploratory Reasoning Models}},
    author       = {Orney, Ifdita Hasan and Hamid, Jubayer Ibn and Ramanujam, Shreya S and Wu, Shirley and Hu, Hengyuan
                    and Goodman, Noah and Sadigh, Dorsa and Finn, Chelsea},
    year         = 2026,
    eprint       = {arXiv:2604.17654},
}""",
}
SET_SETTINGS = (
    "set_size",
    "set_objective",
    "set_reduction",
    "diversity_gate",
    "degenerate_cluster_id",
    "set_estimator",
    "num_sampled_sets",
    "max_enumerated_sets",
)


def describe(settings: Any) -> str:
    gate = ", diversity gate on" if settings.diversity_gate else ""
    return (
        f"- Set RL: sets of n = {settings.set_size} of each group, objective `{settings.set_objective}`, "
        f"marginal set advantage with `set_reduction={settings.set_reduction}`{gate}."
    )


@advantage_method(
    "poly_epo", uses=SET_SETTINGS, label="Poly-EPO", describe=describe, tags=("poly-epo",), paper=POLY_EPO_PAPER
)
def set_advantage(batch: SetBatch, settings: Any) -> tuple[torch.Tensor, dict[str, float]]:
    """Marginal set advantages [G, N], and the mean set value of the batch (``set_score``). A group no larger than
    ``set_size`` (an evaluation with fewer generations) is a single set: its advantages are 0."""
    advantages, set_values = marginal_set_advantages(
        batch.rewards,
        batch.cluster_ids,
        min(settings.set_size, batch.group_size),
        objective=settings.set_objective,
        reduction=settings.set_reduction,
        gate=settings.diversity_gate,
        degenerate_cluster_id=settings.degenerate_cluster_id,
        estimator=settings.set_estimator,
        num_sampled_sets=settings.num_sampled_sets,
        max_enumerated_sets=settings.max_enumerated_sets,
        return_baseline=True,
    )
    return advantages, {"set_score": torch.nanmean(set_values).item()}
