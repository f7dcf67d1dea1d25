"""A training step's judge metrics, from the counters every judge keeps."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

ALWAYS_LOGGED = ("invalid_answers", "retries")


def step_metrics(stats: dict[str, float], latencies: Sequence[float]) -> dict[str, float]:
    """One step's judge metrics from summed counters and all request latencies: every counter, plus
    ``fallback_frac`` (groups that fell back / groups judged), ``latency_p50`` / ``latency_p95``, and zeros for the
    counters a dashboard should always show."""
    metrics = {name: float(value) for name, value in stats.items() if name != "seconds"}
    groups = stats.get("groups", 0)
    fell_back = sum(value for name, value in stats.items() if name.startswith("fallback/"))
    metrics["fallback_frac"] = fell_back / groups if groups else 0.0
    for name in ALWAYS_LOGGED:
        metrics.setdefault(name, 0.0)
    if latencies:
        metrics["latency_p50"], metrics["latency_p95"] = (float(p) for p in np.percentile(latencies, [50, 95]))
    return metrics
