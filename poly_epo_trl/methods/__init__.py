"""Advantage methods: how a step's judged groups become what the loss trains on, one registered function each
(``base``: the interface; ``settings``: where a run's method settings come from; ``apply``: what the trainer does
around every method). Built in: ``poly_epo`` (the marginal set advantage), the paper's baselines ``grpo`` (Dr.GRPO)
and ``grpo_div`` (GRPO+DIV), and the exploration methods of the literature, one file each: ``pass_at_k`` (Pass@k
Training), ``pkpo`` (Pass@k Policy Optimization), ``max_rl`` (MaxRL), ``f_grpo`` (F-GRPO), ``ucpo`` (UCPO),
``unlikeliness`` (the unlikeliness reward), ``ips_grpo`` (inverse probability scaling), ``uniqueness``
(uniqueness-aware RL), ``outcome_batch`` (batch exploration), ``novelty`` (a cross-step novelty bonus in the
spirit of outcome-based exploration), ``darling`` (DARLING: reward x partition diversity) and ``setpo`` (SetPO: a
kernel diversity's leave-one-out marginal added to the advantage). Each declares the
settings it owns. ``floor``: the run's reward floor, read by the methods that multiply rewards."""

from . import (
    baselines,
    darling,
    f_grpo,
    ips_grpo,
    max_rl,
    novelty,
    outcome_batch,
    pass_at_k,
    pkpo,
    poly_epo,
    setpo,
    ucpo,
    uniqueness,
    unlikeliness,
)
from .apply import MethodResult, apply_fallbacks, apply_method
from .base import (
    KINDS,
    METHODS,
    Method,
    MethodState,
    SetBatch,
    advantage_method,
    bonus_method,
    get_method,
    setting_owners,
)
from .pass_at_k import PassAtKSettings
from .poly_epo import SetSettings
from .settings import FITS_GROUP, DiversitySettings, Resolved, resolve_settings, shown_settings

__all__ = [
    "FITS_GROUP",
    "KINDS",
    "METHODS",
    "DiversitySettings",
    "Method",
    "MethodResult",
    "MethodState",
    "PassAtKSettings",
    "Resolved",
    "SetBatch",
    "SetSettings",
    "advantage_method",
    "apply_fallbacks",
    "apply_method",
    "baselines",
    "bonus_method",
    "darling",
    "f_grpo",
    "get_method",
    "ips_grpo",
    "max_rl",
    "novelty",
    "outcome_batch",
    "pass_at_k",
    "pkpo",
    "poly_epo",
    "resolve_settings",
    "setpo",
    "setting_owners",
    "shown_settings",
    "ucpo",
    "uniqueness",
    "unlikeliness",
]
