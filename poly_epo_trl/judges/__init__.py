"""Clustering judges: label each completion of a group with a strategy id (100 = degenerate)."""

from __future__ import annotations

from typing import Any

from ..text import last_boxed
from .answer import AnswerJudge, final_answer
from .base import CallableJudge, ClusteringJudge, DistinctJudge, normalize_labels, run_coroutine


def resolve_judge(judge: Any, **kwargs: Any) -> ClusteringJudge:
    """A judge object, a plain callable ``judge(prompt, completions)``, or a spec string such as ``"answer"``."""
    if isinstance(judge, ClusteringJudge):
        return judge
    if isinstance(judge, str):
        kind, _, arg = judge.partition(":")
        if kind == "answer":
            return AnswerJudge(mode=arg or "auto", **kwargs)
        if kind == "distinct":
            return DistinctJudge(**kwargs)
        raise ValueError(f"Unknown judge spec {judge!r}: use 'answer', 'answer:<mode>' or 'distinct'.")
    if callable(judge):
        return CallableJudge(judge, **kwargs)
    raise TypeError(f"judge must be a ClusteringJudge, a callable or a spec string, got {type(judge).__name__}.")


__all__ = [
    "AnswerJudge",
    "CallableJudge",
    "ClusteringJudge",
    "DistinctJudge",
    "final_answer",
    "last_boxed",
    "normalize_labels",
    "resolve_judge",
    "run_coroutine",
]
