"""Side-by-side advantages of one group under each method (for notebooks and reports)."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from .baselines import diversity_bonus, group_relative_advantages
from .set_advantages import marginal_set_advantages


def compare_advantages(
    rewards: Sequence[float], cluster_ids: Sequence[int], set_size: int = 4, diversity_coef: float = 0.5
) -> dict[str, list[float]]:
    """Per-rollout advantages of one group: Dr.GRPO (r_i - mean r), GRPO+DIV (the same on r + diversity bonus),
    Poly-EPO (mean and sum reductions, ungated and gated), and the marginal set advantage for pass@n and for the
    mean reward (the latter is Dr.GRPO's advantage scaled by (N - n) / (n (N - 1)))."""
    r = torch.tensor([list(rewards)], dtype=torch.float64)
    c = torch.tensor([list(cluster_ids)], dtype=torch.long)
    out = {
        "GRPO": group_relative_advantages(r),
        "GRPO+DIV": group_relative_advantages(r + diversity_bonus(c, diversity_coef)),
        "Poly-EPO": marginal_set_advantages(r, c, set_size),
        "Poly-EPO (sum)": marginal_set_advantages(r, c, set_size, reduction="sum"),
        "Poly-EPO (gated)": marginal_set_advantages(r, c, set_size, gate=True),
        "pass@n": marginal_set_advantages(r, c, set_size, objective="pass_at_n"),
        "mean reward": marginal_set_advantages(r, c, set_size, objective="mean"),
    }
    return {name: values[0].tolist() for name, values in out.items()}
