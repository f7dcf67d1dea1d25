"""A cross-step novelty bonus, in the spirit of outcome-based exploration's historical exploration (Song, Kempe and
Munos 2025, arXiv 2509.06941): a correct rollout whose outcome (its boxed answer, else its final text) the run has
rarely produced for that prompt in earlier steps earns a UCB-style bonus,

    bonus(x, a) = 1[correct] / sqrt(1 + n(x, a)),

with n(x, a) the times prompt x's rollouts answered a in the training steps before this one; weighted by
``diversity_coef`` (lambda) as a reward column of its own, ``novelty_bonus``, with GRPO's advantage on the total. The
counts are the method's state: saved with every checkpoint and restored on resume, so a resumed run gives the bonuses
an uninterrupted one gives. Evaluation batches read the counts without adding to them.

    trainer: novelty
    diversity_coef: 0.5   # lambda
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import torch

from ..judges.answer import final_answer
from ..text import final_text, normalize_answer
from .base import SetBatch, bonus_method
from .papers import OUTCOME_PAPER
from .settings import DiversitySettings


class OutcomeCounts:
    """How often each prompt's rollouts gave each outcome in the training steps so far."""

    def __init__(self) -> None:
        self.counts: dict[str, Counter[str]] = {}

    def seen(self, prompt: str, outcome: str) -> int:
        return self.counts.get(prompt, Counter())[outcome]

    def add(self, prompt: str, outcomes: list[str]) -> None:
        self.counts.setdefault(prompt, Counter()).update(outcomes)

    def state_dict(self) -> dict[str, Any]:
        return {"counts": {prompt: dict(counter) for prompt, counter in self.counts.items()}}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.counts = {prompt: Counter(counter) for prompt, counter in state["counts"].items()}


def outcome(completion: Any) -> str:
    """A rollout's outcome: its boxed answer where it gives one, else its final text, normalized
    (``text.normalize_answer``)."""
    text = final_text(completion)
    return final_answer(text, "boxed") or normalize_answer(text)


def describe(settings: DiversitySettings) -> str:
    return (
        f"- Novelty bonus: reward + {settings.diversity_coef:g} 1[correct] / sqrt(1 + n(x, a)), n the earlier "
        "rollouts of the prompt with the same final answer (outcome-based exploration)."
    )


@bonus_method(
    "novelty",
    column="novelty_bonus",
    weight="diversity_coef",
    needs_judge=False,
    settings=DiversitySettings,
    label="Novelty bonus",
    state=OutcomeCounts,
    describe=describe,
    tags=("novelty-bonus",),
    paper=OUTCOME_PAPER,
)
def novelty(batch: SetBatch, settings: DiversitySettings, counts: OutcomeCounts) -> torch.Tensor:
    """[G, N] bonuses from the counts before this batch; a training batch's outcomes are then counted."""
    bonus = torch.zeros_like(batch.rewards)
    size = batch.group_size
    for g, prompt in enumerate(batch.problems):
        outcomes = [outcome(c) for c in batch.inputs[g * size : (g + 1) * size]]
        for i, answer in enumerate(outcomes):
            if batch.rewards[g, i] >= batch.correct_reward_threshold:
                bonus[g, i] = 1.0 / (1.0 + counts.seen(prompt, answer)) ** 0.5
        if batch.mode == "train":
            counts.add(prompt, outcomes)
    return bonus
