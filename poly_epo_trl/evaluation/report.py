"""Per-problem metrics of k scored samples, and their means over problems with bootstrap confidence bands."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np

from ..constants import DEGENERATE_CLUSTER_ID
from ..judges.answer import mode_key
from .intervals import crossed_interval, paired_difference, seed_range
from .metrics import majority_at_k, majority_vote, pass_at_k, powers_of_two_up_to

CURVES = ("pass_at_k", "maj_at_k")
RATES = (*CURVES, "vote_share", "pcmd")  # in [0, 1]; the other scalars are counts
SCALARS = (
    "vote_share",
    "distinct_clusters",
    "distinct_correct_clusters",
    "num_correct",
    "pcmd",
    "mean_reward",
)


def correct_modes(correct_answer_counts: dict[str, int]) -> dict[str, int]:
    """A problem's correct answers grouped into modes by the answer judge's key (``judges.answer.mode_key``: 1/2 and
    0.5 are one mode, as are 3+7 and 7+3), each with its count."""
    modes: dict[str, int] = {}
    for answer, count in correct_answer_counts.items():
        key = mode_key(answer)
        modes[key] = modes.get(key, 0) + count
    return modes


def pcmd(correct_answer_counts: dict[str, int]) -> float | None:
    """PCMD as ModeBench defines it (``modebench.metrics.mode_diversity``): over a problem's K correct samples, grouped
    into modes (``correct_modes``) of n_1, ..., n_M samples, 1 - sum_m n_m (n_m - 1) / (K (K - 1)), the chance that two
    correct samples drawn without replacement are of different modes; the unbiased estimate of the Gini-Simpson
    index 1 - sum_m q_m^2 of the success-conditional mode distribution. None (undefined, left out of every mean) for
    a problem with fewer than two correct samples. Counts {2, 1} give 2/3."""
    counts = list(correct_modes(correct_answer_counts).values())
    total = sum(counts)
    if total < 2:
        return None
    return 1.0 - sum(n * (n - 1) for n in counts) / (total * (total - 1))


def effective_modes(d_mode: float | None) -> float | None:
    """N_eff = 1 / (1 - PCMD), the effective number of correct modes (ModeBench's ``effective_modes``), of an
    already aggregated PCMD: per problem it is infinite wherever two correct samples differ, so it is derived from a
    mean, never averaged. None for None and for PCMD 1."""
    if d_mode is None or d_mode >= 1.0:
        return None
    return 1.0 / (1.0 - d_mode)


def effective_modes_stat(stat: dict[str, Any] | None) -> dict[str, Any] | None:
    """N_eff of a PCMD stat (mean with its interval): 1 / (1 - x) is increasing, so its interval is the transformed
    PCMD interval, covering at the same rate; an end at PCMD 1 is infinite."""
    if stat is None:
        return None
    return {name: effective_modes(stat[name]) or float("inf") for name in ("mean", "low", "high")}


def mean_reward(rewards: Sequence[float | None]) -> float | None:
    """The mean of the scored rewards (None and NaN: not scored); None when none was."""
    scored = [float(r) for r in rewards if r is not None and r == r]
    return sum(scored) / len(scored) if scored else None


def problem_metrics(
    rewards: Sequence[float],
    answers: Sequence[Hashable | None],
    clusters: Sequence[int] | None,
    correct_reward_threshold: float = 1.0,
    degenerate_cluster_id: int = DEGENERATE_CLUSTER_ID,
    maj_subsets: int = 200,
    seed: int = 0,
) -> dict[str, Any]:
    """One problem's n samples: pass@k and maj@k for k = 1, 2, 4, ..., n, the winning answer's vote share (votes by
    the answer judge's key, ``judges.answer.mode_key``, as PCMD groups modes: 3+7 and 7+3 are one vote), the
    distinct non-degenerate clusters among all and among correct samples (None without clusters; when the judge saw
    only the first m samples, among those m), how often each correct answer was given, the judge-free diversity of
    those answers (``pcmd``, None below two correct samples), and the mean reward of the scored samples."""
    n = len(rewards)
    correct = [r is not None and r >= correct_reward_threshold for r in rewards]  # NaN compares False
    votes = [None if a is None else mode_key(str(a)) for a in answers]  # 3+7 and 7+3, 1/2 and 0.5: one vote
    ks = powers_of_two_up_to(n)
    counts: dict[str, int] = {}
    for answer, ok in zip(answers, correct, strict=True):
        if ok:
            counts[str(answer)] = counts.get(str(answer), 0) + 1
    out: dict[str, Any] = {
        "num_samples": n,
        "num_correct": sum(correct),
        "correct_answer_counts": dict(sorted(counts.items(), key=lambda item: (-item[1], item[0]))),
        "pass_at_k": [pass_at_k(n, sum(correct), k) for k in ks],
        "maj_at_k": [majority_at_k(votes, correct, k, maj_subsets, seed) for k in ks],
        "vote_share": majority_vote(votes)[1],
        "distinct_clusters": None,
        "distinct_correct_clusters": None,
        "pcmd": pcmd(counts),
        "mean_reward": mean_reward(rewards),
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
    problems by the winning answer's share and gives maj@n accuracy per bin. A scalar undefined on some problems
    (PCMD, below two correct samples) is the mean over those it is defined on, as ModeBench's ``cell_summary``
    takes it; ``pcmd_problems`` says how many, and ``effective_modes`` is N_eff of the mean PCMD."""
    if not problems:
        raise ValueError("No scored problems to summarize.")
    problems = [with_modes(p) for p in problems]
    sizes = {p["num_samples"] for p in problems}
    if len(sizes) != 1:
        raise ValueError(f"Problems have different sample counts {sorted(sizes)}; evaluate them in one setting.")
    n = sizes.pop()
    summary: dict[str, Any] = {"num_problems": len(problems), "num_samples": n, "ks": powers_of_two_up_to(n)}
    for key in (*CURVES, *SCALARS):
        rows = [p[key] for p in problems if p.get(key) is not None]
        if not rows:
            summary[key] = None
            continue
        mean, low, high = bootstrap_mean(np.array(rows), num_resamples, confidence, seed)
        summary[key] = {"mean": np.atleast_1d(mean).tolist(), "low": np.atleast_1d(low).tolist()}
        summary[key]["high"] = np.atleast_1d(high).tolist()
        if key in SCALARS:
            summary[key] = {name: values[0] for name, values in summary[key].items()}
    summary["pcmd_problems"] = sum(p["pcmd"] is not None for p in problems)
    summary["effective_modes"] = effective_modes_stat(summary["pcmd"])
    summary["vote_share_calibration"] = vote_share_calibration(problems)
    summary["problems"] = [problem_record(p) for p in problems]
    return summary


RECORD_KEYS = ("num_samples", *CURVES, *SCALARS, "correct_answer_counts")


def with_modes(problem: dict[str, Any]) -> dict[str, Any]:
    """A problem's metrics with ``pcmd`` computed again from its correct answers' counts (``pcmd``), so that a record
    written under an earlier definition reads as today's; a record that kept no counts has none (None), and one
    written before the mean reward was kept has None for it."""
    counts = problem.get("correct_answer_counts")
    found = None if counts is None else pcmd(counts)
    return {**problem, "pcmd": found, "mean_reward": problem.get("mean_reward")}


def problem_record(metrics: dict[str, Any]) -> dict[str, Any]:
    """What a summary keeps of each problem, in order, for comparisons paired on problems after the run: its sample
    and correct counts (pass@k at any k <= n follows), its distinct correct clusters and its correct answers'
    counts (``prompt`` too where the metrics carry it)."""
    prompt = {"prompt": metrics["prompt"]} if "prompt" in metrics else {}
    return prompt | {key: metrics[key] for key in RECORD_KEYS}


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


def across_seeds(summaries: Sequence[dict[str, Any]], confidence: float = 0.95) -> dict[str, Any]:
    """Several runs' ``summarize`` outputs (one per training seed, the same problems and n) in the same shape: each
    curve and scalar is the mean over seeds and problems. With every run's per-problem records, its interval is
    ``intervals.crossed_interval`` of the seeds x problems table (seed and problem spread both in it; it covers at
    its stated rate, ``tests/test_intervals.py``); without them only the seeds' min-max range is known, and that is
    what ``low`` and ``high`` are. ``interval`` says which, in words. PCMD, undefined on some problems, is the mean
    of the seeds' ModeBench cells (``pcmd_cells``: each seed's mean over its own defined problems) with a t interval
    over those seeds (the problems held fixed), ``pcmd_problems`` the mean defined problems a seed; N_eff is derived
    from that mean."""
    if not summaries:
        raise ValueError("No runs to combine.")
    if len({tuple(s["ks"]) for s in summaries}) != 1:
        raise ValueError("The runs were evaluated with different sample counts; combine runs of one setting.")
    out: dict[str, Any] = {key: summaries[0][key] for key in ("num_problems", "num_samples", "ks")}
    out["num_seeds"] = len(summaries)
    paired = all(s.get("problems") for s in summaries) and len({len(s["problems"]) for s in summaries}) == 1
    out["interval"] = interval_label(len(summaries), out["num_problems"], paired, confidence)
    for key in (*CURVES, *SCALARS):
        if not paired and any(s.get(key) is None for s in summaries):
            out[key] = None
            continue
        if paired and key == "pcmd":
            cells = pcmd_cells([s["problems"] for s in summaries])
            out["pcmd_problems"] = float(np.mean([count for _, count in cells]))
            found = [value for value, _ in cells if value is not None]
            if len(summaries) == 1:  # one seed: the interval over its defined problems
                found = [[v for v in (with_modes(p)["pcmd"] for p in summaries[0]["problems"]) if v is not None]]
            else:
                found = [[v] for v in found]
            stat = crossed_interval(found, confidence).within(0.0, 1.0) if found and found[0] else None
            out[key] = None if stat is None else {name: getattr(stat, name) for name in ("mean", "low", "high")}
            continue
        if paired:
            problems = [[with_modes(p) for p in s["problems"]] for s in summaries]
            rows = [[np.atleast_1d(np.nan if p[key] is None else p[key]) for p in run] for run in problems]
            table = np.array(rows, dtype=float)
            table = table[:, ~np.isnan(table).any(axis=(0, 2))]  # problems a run has no value for (a judge's miss)
            if table.shape[1] == 0:
                out[key] = None
                continue
            top = 1.0 if key in RATES else float("inf")
            found = [crossed_interval(table[:, :, i], confidence).within(0.0, top) for i in range(table.shape[2])]
            entry = {name: [getattr(f, name) for f in found] for name in ("mean", "low", "high")}
        else:
            values = np.array([np.atleast_1d(s[key]["mean"]) for s in summaries], dtype=float)  # [seeds, ks]
            ranges = [seed_range(values[:, i]) for i in range(values.shape[1])]
            entry = {name: [r[name] for r in ranges] for name in ("mean", "low", "high")}
        out[key] = {name: v[0] for name, v in entry.items()} if key in SCALARS else entry
    out["effective_modes"] = effective_modes_stat(out["pcmd"])
    return out


def interval_label(num_seeds: int, num_problems: int, paired: bool = True, confidence: float = 0.95) -> str:
    """What ``across_seeds``' intervals are, for tables and figures."""
    if not paired:
        return f"range over {num_seeds} seeds (min-max, not an interval)"
    if num_seeds == 1:
        return f"{confidence:.0%} interval over {num_problems} problems, 1 seed (no seed spread in it)"
    return f"{confidence:.0%} interval over {num_seeds} seeds x {num_problems} problems"


def reported_ks(n: int) -> list[int]:
    """pass@k is reported for k = 1, 2, 4, ... up to n / 2 (at least 1): from n samples, pass@n is one draw a
    problem."""
    return [k for k in powers_of_two_up_to(n) if k <= max(n // 2, 1)]


Records = Sequence[dict[str, Any]]  # one run's per-problem records (``problem_record``), in problem order


def records_table(runs: Sequence[Records], stat: str, k: int | None = None) -> np.ndarray:
    """Seeds x problems of several runs' records: pass@k from each record's sample and correct counts (``stat``
    ``"pass_at_k"``), or each record's ``stat``."""
    if stat == "pass_at_k":
        return np.array([[pass_at_k(r["num_samples"], r["num_correct"], k) for r in run] for run in runs], dtype=float)
    return np.array([[with_modes(r).get(stat) for r in run] for run in runs], dtype=float)


def pooled_records(runs: Sequence[Records]) -> list[dict[str, Any]]:
    """One model scored once per sampling seed, as one run: each problem's samples and correct samples summed over
    the seeds (pass@k estimated from n x seeds samples), its distinct correct clusters the mean over seeds (a count
    that grows with n, so compared at the runs' n), its correct answers' counts summed. ValueError when the runs are
    not of the same problems in the same order."""
    out = []
    for i, record in enumerate(runs[0]):
        same = [run[i] for run in runs]
        if any(r.get("prompt") != record.get("prompt") for r in same):
            raise ValueError("The runs to pool are not of the same problems in the same order.")
        counts: dict[str, int] = {}
        for r in same:
            for answer, count in r["correct_answer_counts"].items():
                counts[answer] = counts.get(answer, 0) + count
        out.append(
            {
                "prompt": record.get("prompt"),
                "num_samples": sum(r["num_samples"] for r in same),
                "num_correct": sum(r["num_correct"] for r in same),
                "distinct_correct_clusters": float(np.mean([r["distinct_correct_clusters"] for r in same])),
                "correct_answer_counts": dict(sorted(counts.items(), key=lambda item: (-item[1], item[0]))),
            }
        )
    return out


def records_summary(
    runs: Sequence[Records], ks: Sequence[int], num_seeds: int | None = None, confidence: float = 0.95
) -> dict[str, Any]:
    """Pass@k at ``ks`` and the distinct correct clusters of several runs (one per seed, the same problems), each the
    mean over seeds and problems with its ``crossed_interval`` (one run: over problems), clipped to where it can lie.
    ``num_seeds``: the seeds the runs stand for, where one pooled run stands for several (``pooled_records``)."""

    def stat(name: str, k: int | None = None) -> dict[str, float]:
        top = 1.0 if name == "pass_at_k" else float("inf")  # a rate, or a count
        return crossed_interval(records_table(runs, name, k), confidence).within(0.0, top).as_dict()

    curve = [stat("pass_at_k", k) for k in ks]
    num_problems = len(runs[0])
    return {
        "ks": list(ks),
        "num_problems": num_problems,
        "num_samples": runs[0][0]["num_samples"],
        "num_seeds": num_seeds or len(runs),
        "interval": interval_label(len(runs), num_problems, confidence=confidence),
        "pass_at_k": {b: [c[b] for c in curve] for b in ("mean", "low", "high")},
        "distinct_correct_clusters": stat("distinct_correct_clusters"),
    }


PAIRED_SCALARS = {"distinct_correct_clusters": "distinct correct", "pcmd": "pcmd", "mean_reward": "mean reward"}


def records_difference(
    first: Sequence[Records], second: Sequence[Records] | Records, ks: Sequence[int], confidence: float = 0.95
) -> dict[str, dict[str, float]]:
    """``first - second`` at pass@k for each of ``ks`` and in distinct correct clusters, PCMD and mean reward (on the
    problems where both have them: ``PAIRED_SCALARS``; PCMD as the seeds' ModeBench cells, ``pcmd_cells``, paired on
    the seed's index with a t interval over seeds), each with its ``paired_difference`` interval: paired on
    problems, and on the
    seed's index where ``second`` is several runs too; one run's records (a model such as the start) are subtracted
    from every seed's."""
    one = bool(second) and isinstance(second[0], dict)
    runs = [second] if one else second

    def other(name: str, k: int | None = None) -> np.ndarray:
        found = records_table(runs, name, k)
        return found[0] if one else found

    out = {
        f"pass@{k}": paired_difference(
            records_table(first, "pass_at_k", k), other("pass_at_k", k), confidence=confidence
        )
        for k in ks
    }
    for key, name in PAIRED_SCALARS.items():
        if key == "pcmd":  # each seed's ModeBench cell against the other's, where both are defined
            mine, theirs = pcmd_cells(first), pcmd_cells(runs)
            theirs = theirs * len(mine) if one else theirs
            found = [[a - b] for (a, _), (b, _) in zip(mine, theirs, strict=True) if a is not None and b is not None]
            if found:
                out[name] = crossed_interval(found, confidence)
            continue
        a, b = records_table(first, key), other(key)
        defined = ~np.isnan(a).any(axis=0) & ~np.isnan(np.atleast_2d(b)).any(axis=0)
        if defined.any():
            out[name] = paired_difference(a[:, defined], b[..., defined], confidence=confidence)
    return {name: interval.as_dict() for name, interval in out.items()}


def pcmd_cells(runs: Sequence[Records]) -> list[tuple[float | None, int]]:
    """Each run's PCMD as ModeBench's ``cell_summary`` gives it: the mean over the run's problems with two or more
    correct samples (None where it has none), and how many those are."""
    cells = []
    for run in runs:
        values = [v for v in (with_modes(r)["pcmd"] for r in run) if v is not None]
        cells.append((float(np.mean(values)) if values else None, len(values)))
    return cells


def paired_comparisons(
    problems: dict[str, Records], confidence: float = 0.95
) -> dict[str, dict[str, dict[str, float]]]:
    """Each checkpoint against the first, paired on problems (``records_difference``, one seed: a t interval over
    problems of the per-problem differences): pass@k for k = 1, 2, 4, ... up to n / 2 (from n samples, pass@n is one
    draw a problem) and the distinct correct clusters, where both have them."""
    labels = list(problems)
    if len(labels) < 2:
        return {}
    first = problems[labels[0]]
    out = {}
    for label in labels[1:]:
        other = problems[label]
        if len(other) != len(first):
            raise ValueError(f"{label!r} was scored on {len(other)} problems and {labels[0]!r} on {len(first)}.")
        n = min(p["num_samples"] for p in (*first, *other))
        out[f"{label} - {labels[0]}"] = records_difference([other], first, reported_ks(n), confidence)
    return out


def format_interval(stat: dict[str, Any] | None, digits: int, at: int | None = None) -> str:
    """``mean [low, high]`` of a scalar's stat, or of a curve's point ``at``; ``mean (no spread)`` where every seed
    and problem gave the same value (pass@64 with every problem solved), which has no interval to show; "-" for a
    missing stat."""
    if stat is None:
        return "-"
    mean, low, high = (stat[b] if at is None else stat[b][at] for b in ("mean", "low", "high"))
    if low == mean == high:
        return f"{mean:.{digits}f} (no spread)"
    return f"{mean:.{digits}f} [{low:.{digits}f}, {high:.{digits}f}]"


def format_table(
    summaries: dict[str, dict[str, Any]],
    first: str = "checkpoint",
    columns: Sequence[tuple[str, str, int | None, int]] | None = None,
) -> str:
    """A console table, one row per summary, each cell mean [interval]. ``columns``: (title, key, the index of a
    curve's point or None for a scalar, digits); by default pass@1, pass@n, maj@n, vote share, distinct correct
    clusters (the judge's), and the correct answers' PCMD and effective number of modes (judge-free). A summary
    without a column's key shows "-"."""
    if columns is None:
        n = max(s["num_samples"] for s in summaries.values())
        columns = (
            ("pass@1", "pass_at_k", 0, 3),
            (f"pass@{n}", "pass_at_k", -1, 3),
            (f"maj@{n}", "maj_at_k", -1, 3),
            ("vote share", "vote_share", None, 3),
            ("distinct correct", "distinct_correct_clusters", None, 2),
            ("PCMD", "pcmd", None, 3),
            ("N_eff", "effective_modes", None, 2),
        )
    width = max(18, *(len(label) + 2 for label in summaries))
    lines = [f"{first:<{width}}" + "".join(f"{title:>24}" for title, *_ in columns)]
    for label, s in summaries.items():
        cells = (format_interval(s.get(key), digits, at) for _, key, at, digits in columns)
        lines.append(f"{label:<{width}}" + "".join(f"{c:>24}" for c in cells))
    return "\n".join(lines)
