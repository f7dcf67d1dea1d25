"""The run's reward floor: the reward that a method multiplying rewards counts as nothing.

The polychromic objective f(G) = mean reward x distinct strategies / n is the paper's for rewards >= 0. With a
negative mean reward, each distinct strategy makes f more negative: diversity turns into a penalty and the most
diverse set of equally bad answers scores lowest. Shifting every reward by a constant c changes f by c x distinct / n,
so where rewards go below 0 the objective depends on where "nothing" is. The run fixes that point, the **floor** F,
and methods that multiply rewards read r - F >= 0 (``SetBatch.floored_rewards``):

- F starts at ``reward_floor`` (default 0: with rewards >= 0 nothing changes, the paper's objective exactly);
- a reward below F lowers F to it, so r - F >= 0 always holds (said in the log; the floor is kept in checkpoints, so
  a resumed run reads the rewards as the uninterrupted one);
- a group is then ordered as it would be with every reward shifted up by -F. The same groups with rewards r and
  r - 10 give the same advantages when F = -10 for the second (declared, or the lowest reward seen).

Methods whose advantage does not change when every reward of a group moves by one constant (GRPO's, the pass@k
ones, those that centre on the group's mean) do not read it.
"""

from __future__ import annotations

import math
from typing import Any

import torch


class RewardFloor:
    """The run's floor F: ``declared`` (``reward_floor``) until a lower reward is seen, then the lowest reward seen.
    ``update`` returns the lowest reward of the batch when it moved the floor (None otherwise)."""

    def __init__(self, declared: float = 0.0) -> None:
        self.declared = float(declared)
        self.value = self.declared

    def update(self, rewards: torch.Tensor) -> float | None:
        """Lower the floor to the batch's lowest scored reward (NaN: unscored, left out) when it is below it."""
        scored = rewards[~torch.isnan(rewards)]
        if scored.numel() == 0:
            return None
        lowest = scored.min().item()
        if not lowest < self.value or not math.isfinite(lowest):
            return None
        self.value = lowest
        return lowest

    @property
    def moved(self) -> bool:
        """Whether a reward below the declared floor has been seen."""
        return self.value < self.declared

    def state_dict(self) -> dict[str, Any]:
        return {"declared": self.declared, "value": self.value}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.value = min(float(state["value"]), self.declared)
