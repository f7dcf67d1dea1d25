"""Cluster by final answer: for tasks where the answer is the strategy, and for offline tests."""

from __future__ import annotations

import re
from typing import Any

from ..text import final_text, last_boxed, normalize_answer
from .base import ClusteringJudge, Clusters

_NUMBER = re.compile(r"-?\d+(?:[.,]\d+)*(?:/\d+)?")
ANSWER_MODES = ("auto", "boxed", "last_number", "text")


def final_answer(text: str, mode: str = "auto") -> str | None:
    """The completion's final answer under ``mode``; None when it has none."""
    if mode in ("auto", "boxed"):
        boxed = last_boxed(text)
        if boxed is not None or mode == "boxed":
            return normalize_answer(boxed) if boxed and boxed.strip() else None
    if mode in ("auto", "last_number"):
        numbers = _NUMBER.findall(text)
        if numbers or mode == "last_number":
            return numbers[-1].replace(",", "") if numbers else None
    stripped = normalize_answer(text)
    return stripped or None


class AnswerJudge(ClusteringJudge):
    """Same final answer, same cluster; no answer, degenerate (id 100). Of an agent's trajectory it reads the
    final answer (``text.final_text``: the last assistant message's words)."""

    name = "answer"

    @staticmethod
    def view(completion: Any, agent: bool = False) -> str:
        return final_text(completion)

    def __init__(self, mode: str = "auto", **kwargs) -> None:
        if mode not in ANSWER_MODES:
            raise ValueError(f"Unknown answer mode {mode!r}: use one of {ANSWER_MODES}.")
        super().__init__(**kwargs)
        self.mode = mode

    async def acluster(self, prompt: str, completions: list[str]) -> Clusters:
        """Ids by final answer; each strategy is named by its answer."""
        answers = [final_answer(completion, self.mode) for completion in completions]
        ids: dict[str, int] = {}
        labels = [self.degenerate_cluster_id if a is None else ids.setdefault(a, len(ids)) for a in answers]
        return Clusters(labels, [None if a is None else f"answer {a}" for a in answers])
