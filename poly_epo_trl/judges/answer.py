"""Cluster by final answer: for tasks where the answer is the strategy, and for offline tests."""

from __future__ import annotations

import re
from fractions import Fraction
from typing import Any

from ..text import final_text, last_boxed, normalize_answer
from .base import ClusteringJudge, Clusters

_NUMBER = re.compile(r"-?\d+(?:[.,]\d+)*(?:/\d+)?")
ANSWER_MODES = ("auto", "boxed", "last_number", "text")
SHORT_ANSWER_WORDS = 5  # auto mode: a completion with no boxed answer and no number is its answer up to this long
_RATIONAL = re.compile(r"-?\d+(?:\.\d+)?(?:/-?\d+)?")
_LATEX_FRACTION = re.compile(r"(-?)\\[dt]?frac\{(-?\d+)\}\{(-?\d+)\}")


def answer_key(answer: str) -> str:
    """What two answers share when they are one strategy: a rational number's lowest terms (``1/2``, ``0.5``,
    ``\\frac{1}{2}`` and ``\\dfrac{2}{4}`` are all ``1/2``), any other answer itself. Symbolic equivalence beyond
    rationals is the math reward's (math-verify), not this judge's."""
    latex = _LATEX_FRACTION.fullmatch(answer)
    text = f"{latex.group(1)}{latex.group(2)}/{latex.group(3)}" if latex else answer
    if len(text) > 64 or not _RATIONAL.fullmatch(text):  # no exponents: 1e999999999 is no number to expand
        return answer
    try:
        return str(Fraction(text))
    except ZeroDivisionError:
        return answer


def final_answer(text: str, mode: str = "auto") -> str | None:
    """The completion's final answer under ``mode``; None when it has none.

    - ``boxed``: the last ``\\boxed{}``; ``last_number``: the last number; ``text``: the whole normalised text.
    - ``auto``: the last ``\\boxed{}``, else the last number, else the whole text when it is a short answer (at most
      ``SHORT_ANSWER_WORDS`` words, as a name or a word a task asks for); longer text with neither is no answer.
      Under the set objective distinct non-answers would count as distinct strategies: rambling is degenerate."""
    if mode in ("auto", "boxed"):
        boxed = last_boxed(text)
        if boxed is not None or mode == "boxed":
            return normalize_answer(boxed) if boxed and boxed.strip() else None
    if mode in ("auto", "last_number"):
        numbers = _NUMBER.findall(text)
        if numbers or mode == "last_number":
            return numbers[-1].replace(",", "") if numbers else None
    if mode == "auto" and len(text.split()) > SHORT_ANSWER_WORDS:
        return None
    return normalize_answer(text) or None


class AnswerJudge(ClusteringJudge):
    """Same final answer (``final_answer``), same cluster; no answer, degenerate (id 100). Of an agent's trajectory
    it reads the final answer (``text.final_text``: the last assistant message's words)."""

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
        labels = [
            self.degenerate_cluster_id if a is None else ids.setdefault(answer_key(a), len(ids)) for a in answers
        ]
        return Clusters(labels, [None if a is None else f"answer {a}" for a in answers])
