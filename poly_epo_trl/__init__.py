"""Poly-EPO (Polychromic Exploratory Policy Optimization) for TRL: set RL for correct and diverse answer sets.

Names are imported on first use, so light parts (rewards, judges, the math) load without torch and TRL.
"""

from __future__ import annotations

import importlib
from typing import Any

from .commands import install as _install_moved_entry_points
from .constants import VERSION as __version__

_install_moved_entry_points()  # poly_epo_trl.train and the other entry points' older names (``commands``)

_EXPORTS = {
    "AnswerJudge": "judges",
    "ClusteringJudge": "judges",
    "DistinctJudge": "judges",
    "GRPODivTrainer": "trainer",
    "PassAtKCallback": "evaluation.callback",
    "PolyEPOConfig": "trainer",
    "PolyEPOTrainer": "trainer",
    "diversity_bonus": "advantages",
    "group_relative_advantages": "advantages",
    "marginal_set_advantages": "advantages",
}


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["__version__", *_EXPORTS]
