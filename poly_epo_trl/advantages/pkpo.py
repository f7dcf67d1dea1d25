"""Pass@k Policy Optimization's reward transformations (Walder and Karkhanis 2025, arXiv 2505.15201), for continuous
rewards g, exactly.

For a group of n scorable rollouts and k <= n, with J a uniform (k-1)-subset of the rollouts other than i:

    s_i          = (1/C(n,k)) sum_{|I|=k, i in I} max_I g  = (k/n) E_J[max(g_i, max_J g)]              (Eq. 19)
    s_i^(loo-1)  = (1/C(n,k)) sum_{|I|=k, i in I} (max_I g - max_{I minus i} g)
                 = (k/n) E_J[max(g_i, max_J g) - max_J g]                                           (Eq. 33)

the paper's recommended estimator, and the mean-centred s_i - mean_j s_j. Over the others sorted increasingly,
o_1 <= ... <= o_{n-1}, max_J is o_j with probability C(j-1, k-2) / C(n-1, k-1), so each takes O(n log n) per
rollout, O(n^2 log n) per group, with no subset enumerated.
"""

from __future__ import annotations

from math import comb

import torch
from torch import Tensor

PKPO_BASELINES = ("loo_minus_one", "mean")


def _max_of_others(others: Tensor, k: int) -> Tensor:
    """P(max_J = o_j) for a uniform (k-1)-subset J of ``others`` sorted increasingly [m-1], k >= 2."""
    m1 = others.numel()
    return torch.tensor([comb(j - 1, k - 2) / comb(m1, k - 1) for j in range(1, m1 + 1)], dtype=torch.float64)


def pkpo_group(g: Tensor, k: int, baseline: str = "loo_minus_one") -> Tensor:
    """The transformed rewards of one group's scorable rewards ``g`` [n] for pass@k (``PKPO_BASELINES``). At k = 1
    (J empty) s_i = g_i / n, and the k-1 baseline, a maximum over no rollout, is taken as the mean-centred one."""
    n = g.numel()
    g = g.to(torch.float64)
    if baseline not in PKPO_BASELINES:
        raise ValueError(f"Unknown PKPO baseline {baseline!r}: use one of {PKPO_BASELINES}.")
    if not 1 <= k <= n:
        raise ValueError(f"k={k} with a group of {n}: k must be within 1..{n}.")
    if k == 1:
        s = g / n
        return s - s.mean()
    with_i = torch.empty(n, dtype=torch.float64)
    without_i = torch.empty(n, dtype=torch.float64)
    for i in range(n):
        others = torch.cat([g[:i], g[i + 1 :]]).sort().values
        p = _max_of_others(others, k)
        with_i[i] = (p * torch.maximum(others, g[i])).sum()
        without_i[i] = (p * others).sum()
    s = (k / n) * with_i
    if baseline == "mean":
        return s - s.mean()
    return (k / n) * (with_i - without_i)


def pkpo_advantages(rewards: Tensor, k: int, baseline: str = "loo_minus_one") -> Tensor:
    """``pkpo_group`` of each row of ``rewards`` [G, N] over its scorable rollouts (NaN: left out, 0), k = min(k,
    the row's scorable count)."""
    out = torch.zeros(rewards.shape, dtype=torch.float64)
    for row in range(rewards.shape[0]):
        scored = ~torch.isnan(rewards[row])
        if int(scored.sum()) >= 1:
            out[row, scored] = pkpo_group(rewards[row, scored], min(k, int(scored.sum())), baseline)
    return out
