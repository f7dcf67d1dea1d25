"""Poly-EPO (Polychromic Exploratory Policy Optimization) for TRL: set RL for correct and diverse answer sets."""

from .advantages import diversity_bonus, group_relative_advantages, marginal_set_advantages
from .judges import AnswerJudge, ClusteringJudge, DistinctJudge
from .trainer import GRPODivTrainer, PolyEPOConfig, PolyEPOTrainer

__version__ = "0.1.0"

__all__ = [
    "AnswerJudge",
    "ClusteringJudge",
    "DistinctJudge",
    "GRPODivTrainer",
    "PolyEPOConfig",
    "PolyEPOTrainer",
    "__version__",
    "diversity_bonus",
    "group_relative_advantages",
    "marginal_set_advantages",
]
