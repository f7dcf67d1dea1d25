"""Pass@k Training's analytic advantage (Chen et al. 2025, arXiv 2508.10751), written from the paper: the reference
the ``pass_at_k`` method and the ``pass_at_n`` set objective are checked against."""

from math import comb

import torch


def chen_et_al(correct: torch.Tensor, k: int) -> torch.Tensor:
    """Pass@k Training's analytic advantages for 0/1 rewards [G, N] (its Section 3, in closed form): with N_neg
    incorrect of N, the group's pass@k R = 1 - C(N_neg, k) / C(N, k), sigma = sqrt(R (1 - R)),
    A_pos = (1 - R) / sigma, A_neg = (1 - R - C(N_neg - 1, k - 1) / C(N - 1, k - 1)) / sigma."""
    rows = []
    for group in correct.tolist():
        n, negatives = len(group), group.count(0.0)
        mean = 1 - comb(negatives, k) / comb(n, k)
        sigma = (mean * (1 - mean)) ** 0.5
        positive = (1 - mean) / sigma
        negative = (1 - mean - comb(negatives - 1, k - 1) / comb(n - 1, k - 1)) / sigma
        rows.append([positive if r == 1.0 else negative for r in group])
    return torch.tensor(rows, dtype=torch.float64)
