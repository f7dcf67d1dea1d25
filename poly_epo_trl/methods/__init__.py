"""Advantage methods: how a step's judged groups become what the loss trains on, one registered function each
(``base``: the interface; ``settings``: where a run's method settings come from; ``apply``: what the trainer does
around every method). Built in: ``poly_epo`` (the marginal set advantage), the paper's baselines ``grpo`` (Dr.GRPO)
and ``grpo_div`` (GRPO+DIV), and two from the literature: ``pass_at_k`` (Pass@k Training's analytic advantage) and
``novelty`` (a cross-step novelty bonus in the spirit of outcome-based exploration). Each declares the settings it
owns (``SetSettings``, ``DiversitySettings``, ``PassAtKSettings``)."""

from . import baselines, novelty, pass_at_k, poly_epo
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
from .baselines import DiversitySettings
from .pass_at_k import PassAtKSettings
from .poly_epo import SetSettings
from .settings import FITS_GROUP, Resolved, resolve_settings, shown_settings

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
    "get_method",
    "novelty",
    "pass_at_k",
    "poly_epo",
    "resolve_settings",
    "setting_owners",
    "shown_settings",
]
