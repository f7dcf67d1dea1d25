"""The trainers: PolyEPOTrainer (set RL), the paper's GRPO+DIV and Dr.GRPO baselines, with their config."""

from .config import PolyEPOConfig, PolyEPOSettings, load_objective
from .methods import METHODS, TrainingMethod
from .poly_epo_trainer import TRAINERS, DrGRPOTrainer, GRPODivTrainer, PolyEPOTrainer
from .step import SetBatch, Step

__all__ = [
    "METHODS",
    "TRAINERS",
    "DrGRPOTrainer",
    "GRPODivTrainer",
    "PolyEPOConfig",
    "PolyEPOSettings",
    "PolyEPOTrainer",
    "SetBatch",
    "Step",
    "TrainingMethod",
    "load_objective",
]
