"""Plain-Python reference: enumerate every set, no torch, no cleverness."""

from __future__ import annotations

import math
from itertools import combinations


def set_value(rewards, clusters, objective, gate=False, degenerate=100):
    n = len(rewards)
    if objective == "mean":
        return sum(rewards) / n
    if objective == "pass_at_n":
        return max(rewards)
    distinct = {c for c in clusters if c != degenerate}
    value = sum(rewards) / n * len(distinct) / n
    return value * (len(distinct) > 1) if gate else value


def brute_force_advantages(rewards, clusters, n, objective="polychromic", gate=False, reduction="mean"):
    scorable = [i for i, r in enumerate(rewards) if not math.isnan(r)]
    out = [0.0] * len(rewards)
    if len(scorable) < n:
        return out
    sets = list(combinations(scorable, n))
    values = {s: set_value([rewards[i] for i in s], [clusters[i] for i in s], objective, gate) for s in sets}
    baseline = sum(values.values()) / len(sets)
    for i in scorable:
        deltas = [v - baseline for s, v in values.items() if i in s]
        out[i] = sum(deltas) / len(deltas) if reduction == "mean" else sum(deltas)
    return out
