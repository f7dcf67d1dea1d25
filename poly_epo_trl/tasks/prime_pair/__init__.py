"""The hard task: prompt ``S=<S>:`` for an even S, a completion ``p+q`` is correct when p and q are primes with
p + q = S (a Goldbach partition).

A completion's strategy is its unordered pair, as the toy task's pair judge ``sum_pair`` clusters it: a prime pair
is a correct strategy, another well-formed pair an incorrect one, malformed output degenerate. Between 1 and 9
partitions exist per prompt, so correct answers are rare under the warm start, the toy task's model
(``builtin:demo``), which writes pairs summing to S but knows nothing of primes (about 1 in 7 of its answers is
right), and there are several distinct ways to be right. Exploration matters: a policy that settles on a few pairs
that work on the training sums loses the held-out sums they miss. Registered as the task and the reward
``prime_pair``; the held-out sums are the toy task's.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from datasets import Dataset

from ...rewards.base import REWARDS
from .. import sum_pair
from ..base import TASKS, Task
from ..sum_pair import HELD_OUT_TOTALS, make_prompt, parse_pair

ALL_TOTALS = tuple(range(10, 100, 2))
TRAIN_TOTALS = tuple(s for s in ALL_TOTALS if s not in HELD_OUT_TOTALS)


@cache
def is_prime(n: int) -> bool:
    return n > 1 and all(n % d for d in range(2, int(n**0.5) + 1))


def partitions(total: int) -> list[tuple[int, int]]:
    """Every Goldbach partition (p, q), p <= q, of ``total``: the task's distinct correct strategies."""
    return [(p, total - p) for p in range(2, total // 2 + 1) if is_prime(p) and is_prime(total - p)]


def is_correct(prompt: str, completion: str) -> bool:
    """A pair summing to S (the toy task's test) whose two numbers are prime."""
    return sum_pair.is_correct(prompt, completion) and all(map(is_prime, parse_pair(completion) or ()))


@REWARDS.register("prime_pair")
def prime_pair_reward(prompts: list[str], completions: list[str], **kwargs: Any) -> list[float]:
    """TRL reward function: 1.0 when the completion is two primes summing to S, else 0.0."""
    return [float(is_correct(p, c)) for p, c in zip(prompts, completions, strict=True)]


def rows(split: str) -> Dataset:
    """The held-out even sums for ``test``, the other even sums in 10..98 for any other split."""
    totals = HELD_OUT_TOTALS if split == "test" else TRAIN_TOTALS
    return Dataset.from_dict({"problem": [make_prompt(s) for s in totals]})


TASK = TASKS.register("prime_pair")(
    Task(rows=rows, reward="prime_pair", judge="sum_pair", model="demo", settings=sum_pair.TASK.settings)
)
