"""Set objectives f(G), evaluated on batches of sets.

Every objective takes ``rewards`` and ``cluster_ids`` of shape ``[..., n]`` (one set of n rollouts in the last
dimension) and returns ``[...]``.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import torch
from torch import Tensor

from ..constants import DEGENERATE_CLUSTER_ID
from ..registry import Registry

SetObjective = Callable[[Tensor, Tensor], Tensor]
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
    objective: str | SetObjective, gate: bool = False, degenerate_cluster_id: int = DEGENERATE_CLUSTER_ID
) -> SetObjective:
    """A registered objective's name (or ``package.module:function``) as its set function; a callable as it is.
    The polychromic objective gets ``gate`` and ``degenerate_cluster_id``."""
    if callable(objective):
        return objective
    if objective == "polychromic":
        return partial(polychromic_objective, gate=gate, degenerate_cluster_id=degenerate_cluster_id)
    return OBJECTIVES.get(objective)
