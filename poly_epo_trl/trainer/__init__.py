"""The trainers: PolyEPOTrainer (set RL; any advantage method of ``methods``), the paper's GRPO+DIV and Dr.GRPO
baselines under their own names, with their config."""

from .config import PolyEPOConfig, PolyEPOSettings
from .poly_epo_trainer import DrGRPOTrainer, GRPODivTrainer, PolyEPOTrainer
from .step import SetBatch, Step

__all__ = [
    "DrGRPOTrainer",
    "GRPODivTrainer",
    "PolyEPOConfig",
    "PolyEPOSettings",
    "PolyEPOTrainer",
    "SetBatch",
    "Step",
]
