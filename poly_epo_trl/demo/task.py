"""The toy task: prompt ``S=<S>:``, a completion ``a+b`` is correct when a, b > 0 are integers with a + b = S.

A completion's strategy is its unordered pair {a, b}; malformed output is degenerate. Several dozen correct answers
exist per prompt, so a policy can be right with one answer or with many: the diversity that set RL should keep.
"""

from __future__ import annotations

import re
from typing import Any

from ..advantages.objectives import DEGENERATE_CLUSTER_ID

ALPHABET = "0123456789+=:S"
_PROMPT = re.compile(r"S=(\d+):")
_ANSWER = re.compile(r"^([1-9]\d*)\+([1-9]\d*)$")


def make_prompt(total: int) -> str:
    return f"S={total}:"


def parse_total(prompt: str) -> int:
    match = _PROMPT.search(prompt)
    if match is None:
        raise ValueError(f"Not a toy-task prompt: {prompt!r}")
    return int(match.group(1))


def parse_pair(completion: str) -> tuple[int, int] | None:
    """The sorted pair (a, b) of a well-formed completion ``a+b``; None otherwise."""
    match = _ANSWER.match(completion.strip())
    if match is None:
        return None
    a, b = int(match.group(1)), int(match.group(2))
    return (a, b) if a <= b else (b, a)


def is_correct(prompt: str, completion: str) -> bool:
    pair = parse_pair(completion)
    return pair is not None and sum(pair) == parse_total(prompt)


def sum_pair_reward(prompts: list[str], completions: list[str], **kwargs: Any) -> list[float]:
    """TRL reward function: 1.0 when the completion is a pair of positive integers summing to S, else 0.0."""
    return [float(is_correct(p, c)) for p, c in zip(prompts, completions, strict=True)]


def pair_judge(prompt: str, completions: list[str]) -> list[int]:
    """Clustering judge for the toy task: same unordered pair, same cluster; malformed output is degenerate."""
    ids: dict[tuple[int, int], int] = {}
    labels = []
    for completion in completions:
        pair = parse_pair(completion)
        labels.append(DEGENERATE_CLUSTER_ID if pair is None else ids.setdefault(pair, len(ids)))
    return labels
