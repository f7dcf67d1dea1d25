"""Set-RL advantages: the marginal set advantage, its set objectives and the paper's baselines."""

from .baselines import diversity_bonus, group_relative_advantages, std_normalised_advantages
from .compare import compare_advantages
from .objectives import (
    BUILTIN_OBJECTIVES,
    DEGENERATE_CLUSTER_ID,
    OBJECTIVES,
    distinct_clusters,
    mean_objective,
    pass_at_n_objective,
    polychromic_objective,
    resolve_objective,
)
from .pkpo import PKPO_BASELINES, pkpo_advantages, pkpo_group
from .scaling import SCALINGS, STD_EPSILON, scale_advantages
from .set_advantages import ESTIMATORS, REDUCTIONS, marginal_set_advantages

__all__ = [
    "BUILTIN_OBJECTIVES",
    "DEGENERATE_CLUSTER_ID",
    "ESTIMATORS",
    "OBJECTIVES",
    "PKPO_BASELINES",
    "REDUCTIONS",
    "SCALINGS",
    "STD_EPSILON",
    "compare_advantages",
    "distinct_clusters",
    "diversity_bonus",
    "group_relative_advantages",
    "marginal_set_advantages",
    "mean_objective",
    "pass_at_n_objective",
    "pkpo_advantages",
    "pkpo_group",
    "polychromic_objective",
    "resolve_objective",
    "scale_advantages",
    "std_normalised_advantages",
]
