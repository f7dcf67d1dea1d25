"""The trade-off task: the prime-pair prompts ``S=<S>:`` where diversity costs reward. A Goldbach pair p + q = S with
the smallest prime p of all of S's partitions earns 1.0, any other prime pair 0.5, anything else 0.

Every prime pair is a correct answer (``correct_reward_threshold: 0.5``: pass@k, PCMD and the distinct correct
clusters count them all), but only one of them earns the full reward, so a policy that spreads over several pairs
gives up mean reward against one that settles on the best. The criticism of reward x diversity objectives, that they
prefer a more diverse, less rewarding policy, can show here: the comparison reads the mean reward beside every
diversity column. Rows, held-out sums, judge (the unordered pair, ``sum_pair``) and warm start (``builtin:demo``)
are the prime-pair task's. Registered as the task and the reward ``tradeoff``.
"""

from __future__ import annotations

from typing import Any

from ...rewards.base import REWARDS
from ..base import TASKS, Task
from ..prime_pair import TASK as PRIME_PAIR
from ..prime_pair import is_correct, partitions, rows
from ..sum_pair import parse_pair, parse_total

BEST, OTHER = 1.0, 0.5


def reward(prompt: str, completion: str) -> float:
    """1.0 for the partition of S with the smallest prime, 0.5 for another prime pair summing to S, else 0."""
    if not is_correct(prompt, completion):
        return 0.0
    return BEST if parse_pair(completion) == partitions(parse_total(prompt))[0] else OTHER


@REWARDS.register("tradeoff")
def tradeoff_reward(prompts: list[str], completions: list[str], **kwargs: Any) -> list[float]:
    """TRL reward function: ``reward`` of each completion."""
    return [reward(p, c) for p, c in zip(prompts, completions, strict=True)]


TASK = TASKS.register("tradeoff")(
    Task(
        rows=rows,
        reward="tradeoff",
        judge=PRIME_PAIR.judge,
        model=PRIME_PAIR.model,
        settings={**PRIME_PAIR.settings, "correct_reward_threshold": OTHER},
    )
)
