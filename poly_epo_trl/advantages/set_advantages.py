"""Marginal set advantages for set reinforcement learning.

For a group of M scorable rollouts and sets G of size n drawn from it,

    A_i = E[f(G) | i in G] - E[f(G)]                   (reduction "mean", the authors' code)
    A_i = C(M-1, n-1) * (E[f(G) | i in G] - E[f(G)])   (reduction "sum", the paper's text)

where E is the uniform average over the C(M, n) sets. Since mean_j E[f | j in G] = E[f], the advantages of a group
sum to zero. The built-in objectives have closed forms in O(M log M) per group; any other objective is enumerated
or sampled.
"""

from __future__ import annotations

import math
from functools import lru_cache
from itertools import combinations

import torch
from torch import Tensor

from .objectives import BUILTIN_OBJECTIVES, DEGENERATE_CLUSTER_ID, OBJECTIVES, SetObjective, resolve_objective

ESTIMATORS = ("auto", "closed_form", "enumerate", "sample")
REDUCTIONS = ("mean", "sum")
DEFAULT_MAX_ENUMERATED_SETS = 100_000
DEFAULT_NUM_SAMPLED_SETS = 4096
_ENUMERATION_CHUNK = 1 << 20  # sets x groups evaluated at once


def marginal_set_advantages(
    rewards: Tensor,
    cluster_ids: Tensor,
    set_size: int,
    objective: str | SetObjective = "polychromic",
    reduction: str = "mean",
    gate: bool = False,
    degenerate_cluster_id: int = DEGENERATE_CLUSTER_ID,
    estimator: str = "auto",
    num_sampled_sets: int | None = None,
    generator: torch.Generator | None = None,
    max_enumerated_sets: int = DEFAULT_MAX_ENUMERATED_SETS,
    return_baseline: bool = False,
    correct_reward_threshold: float = 1.0,
) -> Tensor | tuple[Tensor, Tensor]:
    """Marginal set advantages of ``rewards`` [G, N] with strategy labels ``cluster_ids`` [G, N]; returns [G, N].

    ``objective``: a built-in objective's name (closed form), another registered objective's name or
    ``"package.module:function"``, or a set function f(rewards, cluster_ids). NaN rewards mark rollouts that could
    not be scored: they get advantage 0 and are left out of the sets of their group. A group with fewer than
    ``set_size`` scorable rollouts gets zeros. With ``return_baseline`` the mean set value f^ of each group ([G], NaN
    where the group has too few scorable rollouts) is returned as well. A custom objective that names
    ``degenerate_cluster_id`` or ``correct_reward_threshold`` as parameters is given those (``resolve_objective``).
    """
    if isinstance(objective, str) and objective not in BUILTIN_OBJECTIVES:
        objective = OBJECTIVES.get(objective)  # the one lookup of an objective by name
    _check_arguments(rewards, cluster_ids, set_size, objective, reduction, gate, estimator, num_sampled_sets)
    n = set_size
    set_fn = resolve_objective(objective, gate, degenerate_cluster_id, correct_reward_threshold)
    values = rewards.detach().to(torch.float64)
    labels = cluster_ids.detach().to(device=values.device, dtype=torch.long)
    scorable = ~torch.isnan(values)
    counts = scorable.sum(1)
    out = torch.zeros_like(values)
    baseline = torch.full_like(values[:, 0], math.nan)
    for m in counts.unique().tolist():
        if m < n:
            continue
        rows = (counts == m).nonzero().squeeze(1)
        # Move each group's scorable rollouts to the front, keeping their order.
        order = torch.sort((~scorable[rows]).to(torch.int8), dim=1, stable=True).indices[:, :m]
        r = values[rows].gather(1, order)
        c = labels[rows].gather(1, order)
        method = _choose_estimator(estimator, objective, m, n, max_enumerated_sets)
        if method == "closed_form":
            cond = _closed_form(r, c, n, objective, gate, degenerate_cluster_id)
        elif method == "enumerate":
            cond = _enumerated(r, c, n, set_fn)
        else:
            cond = _sampled(r, c, n, set_fn, num_sampled_sets or DEFAULT_NUM_SAMPLED_SETS, generator)
        group_value = cond.mean(1, keepdim=True)
        baseline[rows] = group_value.squeeze(1)
        adv = cond - group_value
        if reduction == "sum":
            adv = adv * math.comb(m - 1, n - 1)
        out[rows] = out[rows].scatter(1, order, adv)
    dtype = rewards.dtype if rewards.is_floating_point() else torch.float64
    if return_baseline:
        return out.to(dtype), baseline.to(dtype)
    return out.to(dtype)


def _check_arguments(rewards, cluster_ids, set_size, objective, reduction, gate, estimator, num_sampled_sets) -> None:
    if rewards.dim() != 2:
        raise ValueError(f"rewards must be [groups, rollouts], got shape {tuple(rewards.shape)}.")
    if cluster_ids.shape != rewards.shape:
        raise ValueError(
            f"cluster_ids has shape {tuple(cluster_ids.shape)} but rewards has {tuple(rewards.shape)}: one cluster "
            "id per rollout is needed."
        )
    if cluster_ids.is_floating_point() or cluster_ids.is_complex():
        raise TypeError(f"cluster_ids must be an integer tensor, got {cluster_ids.dtype}.")
    if not 1 <= set_size <= rewards.shape[1]:
        raise ValueError(f"set_size must be between 1 and the group size {rewards.shape[1]}, got {set_size}.")
    if reduction not in REDUCTIONS:
        raise ValueError(f"Unknown reduction {reduction!r}: use one of {REDUCTIONS}.")
    if gate and objective != "polychromic":
        raise ValueError(
            "gate=True applies to the polychromic objective only; drop it or use objective='polychromic'."
        )
    if estimator not in ESTIMATORS:
        raise ValueError(f"Unknown estimator {estimator!r}: use one of {ESTIMATORS}.")
    if estimator == "closed_form" and objective not in BUILTIN_OBJECTIVES:
        raise ValueError(
            "estimator='closed_form' exists for the built-in objectives only; use 'enumerate', 'sample' or 'auto' "
            "for a custom objective."
        )
    if num_sampled_sets is not None and num_sampled_sets < 1:
        raise ValueError(f"num_sampled_sets must be positive, got {num_sampled_sets}.")


def _choose_estimator(estimator: str, objective, m: int, n: int, max_enumerated_sets: int) -> str:
    num_sets = math.comb(m, n)
    if estimator == "enumerate" and num_sets > max_enumerated_sets:
        raise ValueError(
            f"Enumerating C({m}, {n}) = {num_sets} sets per group exceeds max_enumerated_sets={max_enumerated_sets}; "
            "raise max_enumerated_sets, or use estimator='sample' (or 'closed_form' for a built-in objective)."
        )
    if estimator != "auto":
        return estimator
    if not callable(objective):
        return "closed_form"
    return "enumerate" if num_sets <= max_enumerated_sets else "sample"


@lru_cache(maxsize=256)
def _binomial_ratios(m: int, n: int, k: int) -> Tensor:
    """Table t[x + 2] = C(x, k) / C(m-1, n-1) for x in [-2, m], with C(x, k) = 0 when x < 0, k < 0 or x < k."""
    base = math.comb(m - 1, n - 1)
    return torch.tensor(
        [math.comb(x, k) / base if x >= 0 and k >= 0 else 0.0 for x in range(-2, m + 1)], dtype=torch.float64
    )


def _ratio(m: int, n: int, k: int, x: Tensor) -> Tensor:
    """C(x, k) / C(m-1, n-1) elementwise for an integer tensor x >= -2."""
    return _binomial_ratios(m, n, k).to(x.device)[x + 2]


def _closed_form(r: Tensor, c: Tensor, n: int, objective: str, gate: bool, degenerate: int) -> Tensor:
    """E[f(G) | i in G] of [g, m] fully scorable groups for a built-in objective, exactly."""
    if objective == "mean":
        return _conditional_mean(r, n)
    if objective == "pass_at_n":
        return _conditional_max(r, n)
    return _conditional_polychromic(r, c, n, gate, degenerate)


def _conditional_mean(r: Tensor, n: int) -> Tensor:
    """E[mean_G r | i in G] = (r_i + a (R - r_i)) / n with a = (n-1)/(m-1)."""
    m = r.shape[1]
    a = (n - 1) / (m - 1) if m > 1 else 0.0
    total = r.sum(1, keepdim=True)
    return (r + a * (total - r)) / n


def _conditional_max(r: Tensor, n: int) -> Tensor:
    """E[max_G r | i in G] from the ranks: the other n-1 members' maximum is the j-th smallest other w.p.
    C(j-1, n-2)/C(m-1, n-1), so with i at rank p (1-based, ascending) and s the sorted rewards,
    E = r_i C(p-1, n-1)/C(m-1, n-1) + sum_{q>p} s_q C(q-2, n-2)/C(m-1, n-1)."""
    m = r.shape[1]
    s, idx = torch.sort(r, dim=1, stable=True)
    q = torch.arange(1, m + 1, device=r.device)
    weighted = s * _ratio(m, n, n - 2, q - 2)
    after = weighted.flip(1).cumsum(1).flip(1) - weighted  # sum over ranks strictly above q
    cond_sorted = s * _ratio(m, n, n - 1, q - 1) + after
    return torch.empty_like(r).scatter_(1, idx, cond_sorted)


def _dense_labels(c: Tensor, degenerate_mask: Tensor) -> Tensor:
    """Relabel each row's cluster ids to slots in [0, m); degenerate rollouts go to slot m."""
    m = c.shape[1]
    ordered, idx = torch.sort(c, dim=1, stable=True)
    new = torch.ones_like(ordered, dtype=torch.long)
    new[:, 1:] = (ordered[:, 1:] != ordered[:, :-1]).long()
    slots = torch.empty_like(c).scatter_(1, idx, new.cumsum(1) - 1)
    return slots.masked_fill(degenerate_mask, m)


def _conditional_polychromic(r: Tensor, c: Tensor, n: int, gate: bool, degenerate: int) -> Tensor:
    """E[f(G) | i in G] for f = mean_G r * D(G) / n, D = distinct non-degenerate clusters (gated: D * 1[D > 1]).

    n^2 f = S(G) D(G) with S the reward sum and D = sum_c 1[c meets G], so E[S D | i] is a sum over clusters of
    E[S 1[c meets G] | i]; each term depends on i and on the cluster's size m_c and reward sum R_c only:
      own cluster:      r_i + a (R - r_i)
      other cluster c:  r_i (1 - C(m-1-m_c, n-1)/B) + a (R - r_i) - (R - r_i - R_c) C(m-2-m_c, n-2)/B
    with B = C(m-1, n-1) and a = (n-1)/(m-1). The sum over all clusters is taken once per group; i's own cluster
    is then swapped for its own term. The gate subtracts E[S 1[D = 1] | i], which counts the sets lying inside one
    cluster plus the degenerate rollouts.
    """
    g, m = r.shape
    deg = c == degenerate
    slot = _dense_labels(c, deg)
    size = torch.zeros(g, m + 1, dtype=torch.long, device=r.device).scatter_add_(1, slot, torch.ones_like(slot))
    rsum = torch.zeros(g, m + 1, dtype=r.dtype, device=r.device).scatter_add_(1, slot, r)
    m_c, r_c, present = size[:, :m], rsum[:, :m], size[:, :m] > 0
    m_deg, r_deg = size[:, m : m + 1], rsum[:, m : m + 1]
    num_clusters = present.sum(1, keepdim=True).to(r.dtype)
    total = r.sum(1, keepdim=True)
    a = (n - 1) / (m - 1) if m > 1 else 0.0
    rest = total - r

    miss = _ratio(m, n, n - 1, m - 1 - m_c)  # P(the other n-1 members avoid cluster c)
    pair = _ratio(m, n, n - 2, m - 2 - m_c)
    agg_hit = ((1 - miss) * present).sum(1, keepdim=True)
    agg_pair = (pair * present).sum(1, keepdim=True)
    agg_pair_r = (pair * r_c * present).sum(1, keepdim=True)
    cond = r * agg_hit + num_clusters * a * rest - rest * agg_pair + agg_pair_r

    own_size = m_c.gather(1, slot.clamp(max=m - 1))
    own_r = r_c.gather(1, slot.clamp(max=m - 1))
    own_formula = (
        r * (1 - _ratio(m, n, n - 1, m - 1 - own_size))
        + a * rest
        - (rest - own_r) * _ratio(m, n, n - 2, m - 2 - own_size)
    )
    cond = cond + torch.where(deg, 0.0, (r + a * rest) - own_formula)

    if gate:
        cond = cond - _single_cluster_mass(r, deg, own_size, own_r, m_c, r_c, present, m_deg, r_deg, n)
    return cond / n**2


def _single_cluster_mass(r, deg, own_size, own_r, m_c, r_c, present, m_deg, r_deg, n) -> Tensor:
    """E[S(G) 1[D(G) = 1] | i in G]: sets whose non-degenerate members all share one cluster."""
    m = r.shape[1]
    num_clusters = present.sum(1, keepdim=True).to(r.dtype)
    # i in a cluster: the other members come from its cluster or the degenerate pool (w of them).
    w = own_size + m_deg - 1
    clustered = r * _ratio(m, n, n - 1, w) + (own_r - r + r_deg) * _ratio(m, n, n - 2, w - 1)
    # i degenerate: the others lie in one cluster c plus the other degenerates, meeting c at least once.
    joint = m_c + m_deg - 1
    hit = ((_ratio(m, n, n - 1, joint) - _ratio(m, n, n - 1, m_deg - 1)) * present).sum(1, keepdim=True)
    pair = (_ratio(m, n, n - 2, joint - 1) * present).sum(1, keepdim=True)
    pair_r = (_ratio(m, n, n - 2, joint - 1) * r_c * present).sum(1, keepdim=True)
    degenerate_only = _ratio(m, n, n - 2, m_deg - 2)
    loose = r * hit + pair_r + (r_deg - r) * pair - num_clusters * (r_deg - r) * degenerate_only
    return torch.where(deg, loose, clustered)


@lru_cache(maxsize=64)
def _combinations(m: int, n: int) -> Tensor:
    return torch.tensor(list(combinations(range(m), n)), dtype=torch.long).view(-1, n)


def _enumerated(r: Tensor, c: Tensor, n: int, set_fn: SetObjective) -> Tensor:
    """E[f(G) | i in G] exactly, by evaluating f on every set, for any objective."""
    g, m = r.shape
    sets = _combinations(m, n).to(r.device)
    cond = torch.zeros_like(r)
    chunk = max(1, _ENUMERATION_CHUNK // max(g, 1))
    for start in range(0, sets.shape[0], chunk):
        members = sets[start : start + chunk]
        f = set_fn(r[:, members], c[:, members]).to(r.dtype)  # [g, s]
        cond.scatter_add_(1, members.flatten().expand(g, -1), f.repeat_interleave(n, dim=1))
    return cond / math.comb(m - 1, n - 1)


def _sampled(
    r: Tensor, c: Tensor, n: int, set_fn: SetObjective, num_sets: int, generator: torch.Generator | None
) -> Tensor:
    """Unbiased Monte-Carlo estimate of E[f(G) | i in G] from num_sets uniform random sets per group.

    With P(i in G) = n/m, (m/n) mean_s f(G_s) 1[i in G_s] is unbiased for E[f | i in G]; its mean over i is
    mean_s f(G_s), unbiased for E[f], so the advantages (their difference) are unbiased and sum to exactly zero.
    """
    g, m = r.shape
    keys = torch.rand(g, num_sets, m, generator=generator, device=generator.device if generator else r.device)
    members = keys.to(r.device).topk(n, dim=2).indices  # [g, s, n]: uniform n-subsets
    f = set_fn(r.gather(1, members.view(g, -1)).view(g, num_sets, n), c.gather(1, members.view(g, -1)).view(g, -1, n))
    f = f.to(r.dtype)
    hits = torch.zeros_like(r).scatter_add_(1, members.view(g, -1), f.repeat_interleave(n, dim=1))
    return (m / n) * hits / num_sets
