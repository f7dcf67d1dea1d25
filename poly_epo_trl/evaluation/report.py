"""Per-problem metrics of k scored samples, and their means over problems with bootstrap confidence bands."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np

from ..constants import DEGENERATE_CLUSTER_ID
from .metrics import majority_at_k, majority_vote, pass_at_k, powers_of_two_up_to

CURVES = ("pass_at_k", "maj_at_k")
SCALARS = ("vote_share", "distinct_clusters", "distinct_correct_clusters", "num_correct")


def problem_metrics(
    rewards: Sequence[float],
    answers: Sequence[Hashable | None],
    clusters: Sequence[int] | None,
    correct_reward_threshold: float = 1.0,
    degenerate_cluster_id: int = DEGENERATE_CLUSTER_ID,
    maj_subsets: int = 200,
    seed: int = 0,
) -> dict[str, Any]:
    """One problem's n samples: pass@k and maj@k for k = 1, 2, 4, ..., n, the winning answer's vote share, and the
    distinct non-degenerate clusters among all and among correct samples (None without clusters; when the judge saw
    only the first m samples, among those m)."""
    n = len(rewards)
    correct = [r is not None and r >= correct_reward_threshold for r in rewards]  # NaN compares False
    ks = powers_of_two_up_to(n)
    out: dict[str, Any] = {
        "num_samples": n,
        "num_correct": sum(correct),
        "pass_at_k": [pass_at_k(n, sum(correct), k) for k in ks],
        "maj_at_k": [majority_at_k(answers, correct, k, maj_subsets, seed) for k in ks],
        "vote_share": majority_vote(answers)[1],
        "distinct_clusters": None,
        "distinct_correct_clusters": None,
    }
    if clusters is not None:
        kept = [c for c in clusters if c != degenerate_cluster_id]
        out["distinct_clusters"] = len(set(kept))
        out["distinct_correct_clusters"] = len(
            {c for c, ok in zip(clusters, correct[: len(clusters)], strict=True) if ok and c != degenerate_cluster_id}
        )
    return out


def bootstrap_mean(
    values: np.ndarray, num_resamples: int = 1000, confidence: float = 0.95, seed: int = 0
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean over problems (axis 0) and its percentile-bootstrap interval, resampling problems with replacement."""
    values = np.asarray(values, dtype=float)
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(values), size=(num_resamples, len(values)))
    means = values[picks].mean(axis=1)
    tail = (1 - confidence) / 2 * 100
    return values.mean(axis=0), np.percentile(means, tail, axis=0), np.percentile(means, 100 - tail, axis=0)


def summarize(
    problems: Sequence[dict[str, Any]], num_resamples: int = 1000, confidence: float = 0.95, seed: int = 0
) -> dict[str, Any]:
    """Means with bootstrap intervals over problems; curves are indexed by ``ks``; the vote-share calibration bins
    problems by the winning answer's share and gives maj@n accuracy per bin."""
    if not problems:
        raise ValueError("No scored problems to summarize.")
    sizes = {p["num_samples"] for p in problems}
    if len(sizes) != 1:
        raise ValueError(f"Problems have different sample counts {sorted(sizes)}; evaluate them in one setting.")
    n = sizes.pop()
    summary: dict[str, Any] = {"num_problems": len(problems), "num_samples": n, "ks": powers_of_two_up_to(n)}
    for key in (*CURVES, *SCALARS):
        rows = [p[key] for p in problems if p[key] is not None]
        if not rows:
            summary[key] = None
            continue
        mean, low, high = bootstrap_mean(np.array(rows), num_resamples, confidence, seed)
        summary[key] = {"mean": np.atleast_1d(mean).tolist(), "low": np.atleast_1d(low).tolist()}
        summary[key]["high"] = np.atleast_1d(high).tolist()
        if key in SCALARS:
            summary[key] = {name: values[0] for name, values in summary[key].items()}
    summary["vote_share_calibration"] = vote_share_calibration(problems)
    return summary


def vote_share_calibration(problems: Sequence[dict[str, Any]], bins: int = 10) -> list[dict[str, float]]:
    """maj@n accuracy of the problems whose winning vote share falls in each of ``bins`` equal bins of [0, 1]."""
    edges = np.linspace(0.0, 1.0, bins + 1)
    shares = np.array([p["vote_share"] for p in problems])
    right = np.array([p["maj_at_k"][-1] for p in problems])
    where = np.clip(np.digitize(shares, edges[1:-1], right=True), 0, bins - 1)
    out = []
    for b in range(bins):
        inside = where == b
        if inside.any():
            out.append(
                {
                    "low": float(edges[b]),
                    "high": float(edges[b + 1]),
                    "count": int(inside.sum()),
                    "accuracy": float(right[inside].mean()),
                }
            )
    return out


def across_seeds(
    summaries: Sequence[dict[str, Any]], confidence: float = 0.95, num_resamples: int = 10_000, seed: int = 0
) -> dict[str, Any]:
    """Several runs' ``summarize`` outputs (one per training seed, same problems and n) in the same shape: each
    curve and scalar is the mean over seeds with a percentile-bootstrap interval of that mean, resampling seeds (the
    run-to-run spread, not the sampling noise within a run). The interval lies within the seeds' own range, so a rate
    stays within [0, 1] and a count above 0 (a Student-t interval of a bounded, bimodal rate over 5 seeds went below
    0); with few seeds it is narrower than the true uncertainty. One seed gives a zero-width interval."""
    if not summaries:
        raise ValueError("No runs to combine.")
    if len({tuple(s["ks"]) for s in summaries}) != 1:
        raise ValueError("The runs were evaluated with different sample counts; combine runs of one setting.")
    out: dict[str, Any] = {key: summaries[0][key] for key in ("num_problems", "num_samples", "ks")}
    out["num_seeds"] = len(summaries)
    for key in (*CURVES, *SCALARS):
        if any(s[key] is None for s in summaries):
            out[key] = None
            continue
        values = np.array([np.atleast_1d(s[key]["mean"]) for s in summaries], dtype=float)  # [seeds, ks]
        mean, low, high = bootstrap_mean(values, num_resamples, confidence, seed)
        entry = {"mean": mean.tolist(), "low": low.tolist(), "high": high.tolist()}
        out[key] = {name: v[0] for name, v in entry.items()} if key in SCALARS else entry
    return out


def seeds_interval(num_seeds: int) -> str:
    """How ``across_seeds``' intervals read in a table or a figure, for one seed and for several."""
    return "1 seed, no interval over seeds" if num_seeds == 1 else f"95% bootstrap interval over {num_seeds} seeds"


def format_interval(stat: dict[str, Any] | None, digits: int, at: int | None = None) -> str:
    """``mean [low, high]`` of a scalar's stat, or of a curve's point ``at`` (the mean alone when the interval has no
    width); "-" for a missing stat."""
    if stat is None:
        return "-"
    mean, low, high = (stat[b] if at is None else stat[b][at] for b in ("mean", "low", "high"))
    if low == mean == high:  # no interval (one seed)
        return f"{mean:.{digits}f}"
    return f"{mean:.{digits}f} [{low:.{digits}f}, {high:.{digits}f}]"


def format_table(summaries: dict[str, dict[str, Any]], first: str = "checkpoint") -> str:
    """A console table, one row per summary: pass@1, pass@n, maj@n, vote share and distinct correct clusters, each
    as mean [interval]."""
    cell = format_interval
    n = max(s["num_samples"] for s in summaries.values())
    columns = ("pass@1", f"pass@{n}", f"maj@{n}", "vote share", "distinct correct")
    lines = [f"{first:<18}" + "".join(f"{c:>22}" for c in columns)]
    for label, s in summaries.items():
        cells = (
            cell(s["pass_at_k"], 3, 0),
            cell(s["pass_at_k"], 3, -1),
            cell(s["maj_at_k"], 3, -1),
            cell(s["vote_share"], 3),
            cell(s["distinct_correct_clusters"], 2),
        )
        lines.append(f"{label:<18}" + "".join(f"{c:>22}" for c in cells))
    return "\n".join(lines)
