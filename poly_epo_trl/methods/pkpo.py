"""PKPO, Pass@k Policy Optimization (Walder and Karkhanis 2025, arXiv 2505.15201): each rollout's share of the
gradient of the group's expected best reward over k samples, for continuous rewards, exactly
(``advantages.pkpo``):

    s_i = (k/n) E[max over a k-subset containing i]                                         (their Eq. 19)
    loo_minus_one (default, their recommended Eq. 33): (k/n) E_J[max(g_i, max_J g) - max_J g]
    mean: s_i - mean_j s_j

with J a uniform (k-1)-subset of the others; k is ``set_size``. The published number it pins: n = 4 rollouts, 2 of
them correct, k = 2, the mean baseline gives +1/12 to a correct rollout and -1/12 to a wrong one. These are the
paper's transformed rewards, used as the advantage as they are (``owns_scaling``: no std division on top).

**Relation to** ``pass_at_k`` (Chen et al. 2025): for binary rewards, Chen et al.'s advantage is the mean-baselined
s_i rescaled by n/k and divided by sigma = sqrt(R (1 - R)), R the group's pass@k: (n/k)(s_i - mean s) / sigma
(``tests/test_methods_literature.py`` checks it). PKPO keeps continuous rewards continuous and recommends the k-1
baseline instead.

    trainer: pkpo
    set_size: 4        # k
    pkpo_baseline: loo_minus_one
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from ..advantages import PKPO_BASELINES, pkpo_advantages
from .base import SetBatch, advantage_method
from .papers import PKPO_PAPER
from .settings import size_field


@dataclass
class PKPOSettings:
    """PKPO's k and baseline."""

    set_size: int = size_field(
        "k, the number of samples whose best reward is optimised (left unset: 4, or N - 1 for a group of N <= 4).",
        "the best of one sample is its reward, so PKPO trains on each rollout's reward, mean-centred "
        "(the k - 1 baseline of a set of none is taken as the mean); num_generations of 3 or more gives k = 2",
    )
    pkpo_baseline: str = field(
        default="loo_minus_one",
        metadata={
            "help": f"One of {PKPO_BASELINES}: 'loo_minus_one', the paper's recommended (k-1)-subset baseline "
            "(its Eq. 33); 'mean', the transformed rewards minus their group mean. Paper: loo_minus_one."
        },
    )

    def check(self) -> None:
        if self.pkpo_baseline not in PKPO_BASELINES:
            raise ValueError(f"pkpo_baseline={self.pkpo_baseline!r}: use one of {PKPO_BASELINES}.")


@advantage_method(
    "pkpo",
    needs_judge=False,
    settings=PKPOSettings,
    label="PKPO",
    describe=lambda s: (
        f"- PKPO: pass@{s.set_size} transformed rewards, baseline {s.pkpo_baseline} (Walder and Karkhanis 2025)."
    ),
    tags=("pkpo",),
    paper=PKPO_PAPER,
    owns_scaling=True,
)
def pkpo(batch: SetBatch, settings: PKPOSettings) -> torch.Tensor:
    """[G, N] transformed rewards; unscored rollouts (NaN) are left out of their group and get 0."""
    return pkpo_advantages(batch.rewards, min(settings.set_size, batch.group_size), settings.pkpo_baseline)
