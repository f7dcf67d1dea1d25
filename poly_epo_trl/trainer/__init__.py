"""The trainers: PolyEPOTrainer (set RL) and the paper's GRPO+DIV baseline, with their config."""

from .config import PolyEPOConfig, load_objective
from .poly_epo_trainer import FiniteRewardsGRPOTrainer, GRPODivTrainer, PolyEPOTrainer, SetBatch

__all__ = [
    "FiniteRewardsGRPOTrainer",
    "GRPODivTrainer",
    "PolyEPOConfig",
    "PolyEPOTrainer",
    "SetBatch",
    "load_objective",
]
