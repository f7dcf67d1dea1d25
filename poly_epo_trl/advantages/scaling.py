"""Standard-deviation scaling of advantages, GRPOTrainer's ``scale_rewards`` carried over to set advantages."""

from __future__ import annotations

import torch
from torch import Tensor

SCALINGS = ("none", "group", "batch")
STD_EPSILON = 1e-4  # GRPOTrainer's: advantages / (std + 1e-4)


def scale_advantages(advantages: Tensor, scale: str, scored: Tensor | None = None) -> Tensor:
    """``advantages`` [G, N] divided by (std + 1e-4): the std of each group's advantages (``"group"``), of the whole
    batch's (``"batch"``), or no scaling (``"none"``, the paper's Dr.GRPO setting).

    The std is unbiased, over scored rollouts only (``scored`` [G, N], default all; unscored ones keep advantage 0),
    and 0 where fewer than two are scored, as GRPOTrainer scales its reward-minus-mean advantages. The set objectives
    are linear in the rewards, so scaling the rewards by c > 0 scales the set advantages by c and leaves the scaled
    advantages unchanged.
    """
    if scale not in SCALINGS:
        raise ValueError(f"Unknown scaling {scale!r}: use one of {SCALINGS}.")
    if scale == "none":
        return advantages
    mask = torch.ones_like(advantages, dtype=torch.bool) if scored is None else scored.to(torch.bool)
    values = advantages.to(torch.float64).masked_fill(~mask, 0.0)
    dims = (1,) if scale == "group" else (0, 1)
    count = mask.sum(dim=dims, keepdim=True).to(torch.float64)
    mean = values.sum(dim=dims, keepdim=True) / count.clamp(min=1)
    squares = ((values - mean) ** 2).masked_fill(~mask, 0.0).sum(dim=dims, keepdim=True)
    std = torch.where(count > 1, (squares / (count - 1).clamp(min=1)).sqrt(), torch.zeros_like(count))
    return (values / (std + STD_EPSILON)).masked_fill(~mask, 0.0).to(advantages.dtype)
