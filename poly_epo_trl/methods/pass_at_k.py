"""Pass@k Training (Chen et al. 2025, arXiv 2508.10751): the analytic advantage of a group's pass@k, for rewards
read as correct or not (``correct_reward_threshold``), k = ``set_size``. With N scored rollouts of which N_neg are
incorrect, the group's pass@k is R = 1 - C(N_neg, k) / C(N, k) and sigma = sqrt(R (1 - R)); a correct rollout gets
(1 - R) / sigma, an incorrect one (1 - R - C(N_neg - 1, k - 1) / C(N - 1, k - 1)) / sigma, and a group whose sets
of k all succeed or all fail (sigma = 0) gets 0. It is the marginal set advantage of f(G) = max reward
(``set_objective: pass_at_n``) divided by sigma (``tests/test_methods.py`` checks the two agree).

    trainer: pass_at_k
    set_size: 4   # k
"""

from __future__ import annotations

from dataclasses import dataclass
from math import comb

import torch

from .base import SetBatch, advantage_method
from .papers import PASS_AT_K_PAPER
from .settings import size_field


def group_advantages(correct: list[bool], k: int) -> list[float]:
    """Chen et al.'s advantages of one group's scored rollouts (``correct``: each one's verdict)."""
    n, negatives = len(correct), correct.count(False)
    if n < k:
        return [0.0] * n
    mean = 1 - comb(negatives, k) / comb(n, k)
    sigma = (mean * (1 - mean)) ** 0.5
    if sigma == 0:
        return [0.0] * n
    positive = (1 - mean) / sigma
    negative = (1 - mean - comb(negatives - 1, k - 1) / comb(n - 1, k - 1)) / sigma if negatives else 0.0
    return [positive if c else negative for c in correct]


@dataclass
class PassAtKSettings:
    """Pass@k Training's k."""

    set_size: int = size_field(
        "k, the size of the sets whose pass@k is trained for (left unset: 4, or N - 1 for a group of N <= 4).",
        "pass@1 is the mean reward, so the advantage is GRPO's, std-normalised, on correct or not; "
        "num_generations of 3 or more gives k = 2",
    )


def describe(settings: PassAtKSettings) -> str:
    return f"- Pass@k Training: the analytic advantage of each group's pass@{settings.set_size} (Chen et al. 2025)."


@advantage_method(
    "pass_at_k",
    needs_judge=False,
    settings=PassAtKSettings,
    label="Pass@k Training",
    describe=describe,
    tags=("pass-at-k",),
    paper=PASS_AT_K_PAPER,
)
def pass_at_k(batch: SetBatch, settings: PassAtKSettings) -> torch.Tensor:
    """[G, N] advantages; unscored rollouts (NaN reward) are left out of their group and get 0."""
    advantages = torch.zeros_like(batch.rewards)
    for g, rewards in enumerate(batch.rewards):
        scored = ~torch.isnan(rewards)
        correct = (rewards[scored] >= batch.correct_reward_threshold).tolist()
        values = group_advantages(correct, min(settings.set_size, batch.group_size))
        advantages[g, scored] = torch.tensor(values, dtype=advantages.dtype)
    return advantages
