"""What happens around every method, the same for each: its values checked, the judge's fallbacks applied, the
advantages scaled as ``scale_rewards`` asks, and the advantage metrics. The trainer calls ``apply_method`` once a
generation batch and puts the result where TRL reads it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from ..advantages import group_relative_advantages, scale_advantages
from .base import Method, MethodState, SetBatch


@dataclass
class MethodResult:
    """A method's output for one batch: ``advantages`` [G, N] in place of GRPO's (advantage methods), or ``bonus``
    [G, N], the values of its reward column (bonus methods); ``metrics`` to log as ``<method name>/<metric>``."""

    advantages: torch.Tensor | None = None
    bonus: torch.Tensor | None = None
    metrics: dict[str, float] = field(default_factory=dict)


def apply_method(
    method: Method, batch: SetBatch, settings: Any, scale_rewards: str, state: MethodState | None = None
) -> MethodResult:
    """``method`` on ``batch``, with everything around it. Unscored rollouts (NaN reward) get advantage 0 and no
    bonus; a group the judge could not cluster gets Dr.GRPO's advantage (``judge_fallback: grpo``) or none
    (``skip``), and no bonus; ``scale_rewards`` divides the advantages by their std unless the method owns its
    normalisation (``Method.owns_scaling``). ValueError for a method that reads log-probabilities on a batch without
    them."""
    if method.kind == "none":
        return MethodResult()
    if method.reads_logprobs:
        batch.logprobs_for(method.name)
    output = method(batch, settings, state)
    values, metrics = output if isinstance(output, tuple) else (output, {})
    values = checked_values(method, batch, values)
    if method.kind == "bonus":
        skipped = torch.tensor([f in ("grpo", "skip") for f in batch.fallbacks], dtype=torch.bool)
        return MethodResult(bonus=values.masked_fill(skipped.unsqueeze(1), 0.0), metrics=dict(metrics))
    advantages = apply_fallbacks(values, batch)
    if not method.owns_scaling:
        advantages = scale_advantages(advantages, scale_rewards, ~torch.isnan(batch.rewards))
    metrics = {
        **metrics,
        "advantage_abs_mean": advantages.abs().mean().item(),
        "advantage_std": advantages.std().item(),
        "advantage_max": advantages.max().item(),
        "advantage_min": advantages.min().item(),
    }
    return MethodResult(advantages=advantages, metrics=metrics)


def checked_values(method: Method, batch: SetBatch, values: Any) -> torch.Tensor:
    """``values`` as a float tensor of the batch's shape, 0 where the rollout was not scored; ValueError naming the
    method for another shape, or for a value that is not finite on a scored rollout."""
    shape = tuple(batch.rewards.shape)
    try:
        values = torch.as_tensor(values, dtype=batch.rewards.dtype)
    except (TypeError, ValueError, RuntimeError) as error:
        raise ValueError(f"Method {method.name!r} returned {type(values).__name__}, not numbers: {error}") from None
    if tuple(values.shape) != shape:
        raise ValueError(
            f"Method {method.name!r} returned shape {tuple(values.shape)}: it must give one value per rollout, "
            f"[groups, rollouts] = {list(shape)}."
        )
    scored = ~torch.isnan(batch.rewards)
    bad = scored & ~torch.isfinite(values)
    if bad.any():
        raise ValueError(
            f"Method {method.name!r} returned {values[bad][0].item()} for {int(bad.sum())} scored rollouts: every "
            "scored rollout needs a finite value."
        )
    return values.masked_fill(~scored, 0.0)


def apply_fallbacks(advantages: torch.Tensor, batch: SetBatch) -> torch.Tensor:
    """Groups the judge could not cluster: Dr.GRPO's advantage ("grpo") or none at all ("skip")."""
    if not any(f in ("grpo", "skip") for f in batch.fallbacks):
        return advantages
    advantages = advantages.clone()
    grpo = group_relative_advantages(batch.rewards)
    for g, fallback in enumerate(batch.fallbacks):
        if fallback == "grpo":
            advantages[g] = grpo[g]
        elif fallback == "skip":
            advantages[g] = 0.0
    return advantages
