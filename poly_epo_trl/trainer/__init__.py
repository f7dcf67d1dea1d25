"""The trainers: PolyEPOTrainer (set RL) and the paper's GRPO+DIV baseline, with their config."""

from .config import PolyEPOConfig, load_objective
from .finite_rewards import FiniteRewardsGRPOTrainer
from .judged_groups import SetBatch
from .poly_epo_trainer import GRPODivTrainer, PolyEPOTrainer

__all__ = [
    "FiniteRewardsGRPOTrainer",
    "GRPODivTrainer",
    "PolyEPOConfig",
    "PolyEPOTrainer",
    "SetBatch",
    "load_objective",
]
