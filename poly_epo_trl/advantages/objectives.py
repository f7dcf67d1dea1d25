"""Set objectives f(G), evaluated on batches of sets.

Every objective takes ``rewards`` and ``cluster_ids`` of shape ``[..., n]`` (one set of n rollouts in the last
dimension) and returns ``[...]``. An objective that also names ``degenerate_cluster_id`` or
``correct_reward_threshold`` among its parameters is given the run's (``RUN_SETTINGS``).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from functools import partial

import torch
from torch import Tensor

from ..constants import DEGENERATE_CLUSTER_ID
from ..registry import Registry

SetObjective = Callable[[Tensor, Tensor], Tensor]
RUN_SETTINGS = ("degenerate_cluster_id", "correct_reward_threshold")  # what an objective may ask of the run
OBJECTIVES: Registry[SetObjective] = Registry("set_objective", "your own f(rewards, cluster_ids)")


def distinct_clusters(cluster_ids: Tensor, degenerate_cluster_id: int = DEGENERATE_CLUSTER_ID) -> Tensor:
    """|{c_i : i in G, c_i != degenerate}| for each set in the last dimension."""
    ordered = cluster_ids.sort(dim=-1).values
    new = torch.ones_like(ordered, dtype=torch.bool)
    new[..., 1:] = ordered[..., 1:] != ordered[..., :-1]
    return (new & (ordered != degenerate_cluster_id)).sum(-1)


@OBJECTIVES.register("polychromic")
def polychromic_objective(
    rewards: Tensor,
    cluster_ids: Tensor,
    gate: bool = False,
    degenerate_cluster_id: int = DEGENERATE_CLUSTER_ID,
) -> Tensor:
    """f(G) = mean_{i in G} r_i * |U| / n, with U the distinct non-degenerate clusters; times 1[|U| > 1] if gated."""
    n = rewards.shape[-1]
    distinct = distinct_clusters(cluster_ids, degenerate_cluster_id).to(rewards.dtype)
    if gate:
        distinct = distinct * (distinct > 1)
    return rewards.mean(-1) * distinct / n


@OBJECTIVES.register("pass_at_n")
def pass_at_n_objective(rewards: Tensor, cluster_ids: Tensor) -> Tensor:
    """f(G) = max_{i in G} r_i."""
    return rewards.amax(-1)


@OBJECTIVES.register("mean")
def mean_objective(rewards: Tensor, cluster_ids: Tensor) -> Tensor:
    """f(G) = mean_{i in G} r_i."""
    return rewards.mean(-1)


BUILTIN_OBJECTIVES = ("polychromic", "pass_at_n", "mean")  # the registered objectives with a closed form


def resolve_objective(
    objective: str | SetObjective,
    gate: bool = False,
    degenerate_cluster_id: int = DEGENERATE_CLUSTER_ID,
    correct_reward_threshold: float = 1.0,
) -> SetObjective:
    """A registered objective's name (or ``package.module:function``) as its set function ``f(rewards,
    cluster_ids)``. The polychromic objective gets ``gate`` and ``degenerate_cluster_id``; any other objective the
    run's settings among ``RUN_SETTINGS`` that it names as parameters."""
    if objective == "polychromic":
        return partial(polychromic_objective, gate=gate, degenerate_cluster_id=degenerate_cluster_id)
    fn = objective if callable(objective) else OBJECTIVES.get(objective)
    run = {"degenerate_cluster_id": degenerate_cluster_id, "correct_reward_threshold": correct_reward_threshold}
    wanted = {name: run[name] for name in RUN_SETTINGS if name in parameters(fn)}
    return partial(fn, **wanted) if wanted else fn


def parameters(fn: Callable[..., object]) -> frozenset[str]:
    """The names of ``fn``'s parameters (none where Python cannot say, as for some built-ins)."""
    try:
        return frozenset(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return frozenset()
