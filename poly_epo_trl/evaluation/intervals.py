"""Intervals for runs scored on the same problems: a table of seeds x problems, and comparisons paired on both.

A held-out number varies with the training seed and with the problems drawn, and every seed is scored on the same
problems, so the two are crossed. The estimand is the mean over the population of seeds and problems; its estimate is
the table's grand mean. Under the two-way random-effects model ``x[s, p] = mu + a_s + b_p + e_sp`` the grand mean's
variance is ``var(a)/S + var(b)/P + var(e)/(SP)``, estimated without bias by the table's mean squares
(``(MS_seeds + MS_problems - MS_residual) / (S P)``), with Satterthwaite's degrees of freedom and a Student-t
quantile. With 3 seeds the seed part has 2 degrees of freedom, and the interval is as wide as that honestly makes it:
where the seeds' part (``MS_seeds - MS_residual``) is at least half the estimate, the degrees of freedom are S - 1,
since Satterthwaite's approximation overstates them there (it covered 0.90-0.91 at 3 seeds x 66 problems with a strong
seed effect; S - 1 brings it to about 0.95, at up to a quarter more width).

The population is that of the runs: new training seeds and new problems of the same kind, each seed scored on the
same problems. A paired difference is about the same population, its two runs sharing seed index and problems.

Why not a library's bootstrap: a percentile bootstrap over 3 seeds is their min-max range (3.7% of resamples fall on
the lowest seed alone), which covers about 75%, not 95%; rliable's stratified bootstrap resamples seeds within each
problem, treating the problems as fixed and a seed's effect on every problem as independent noise; scipy's bootstrap
resamples one axis. None handles two crossed factors with 3 levels of one; the quantile is scipy's.
``tests/test_intervals.py`` checks the coverage by simulation at the benchmark's seed and problem counts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np


@dataclass(frozen=True)
class Interval:
    """A mean, its ``confidence`` interval [low, high] and the degrees of freedom behind it (inf: no spread)."""

    mean: float
    low: float
    high: float
    confidence: float
    df: float

    def clears(self, bound: float, above: bool = True) -> bool:
        """The whole interval lies above ``bound`` (or below it): a target met with its uncertainty."""
        return self.low > bound if above else self.high < bound

    def within(self, low: float, high: float = float("inf")) -> Interval:
        """The interval clipped to where the quantity can lie (a rate in [0, 1], a count from 0): the true mean is
        inside, so no coverage is lost."""
        return Interval(self.mean, max(self.low, low), min(self.high, high), self.confidence, self.df)

    def as_dict(self) -> dict[str, float]:
        return asdict(self)


def crossed_interval(table: Sequence[Sequence[float]] | np.ndarray, confidence: float = 0.95) -> Interval:
    """The grand mean of a seeds x problems ``table`` (rows: seeds, columns: problems) and its interval under the
    two-way random-effects model (module docstring). One seed: the problems' t interval (df P - 1); one problem: the
    seeds' (df S - 1); one cell, or a table without spread: a zero-width interval. NaN cells are refused."""
    x = np.asarray(table, dtype=float)
    if x.ndim != 2 or x.size == 0:
        raise ValueError(f"A seeds x problems table is needed; got shape {x.shape}.")
    if np.isnan(x).any():
        raise ValueError("The table has NaN cells: score every problem of every seed.")
    seeds, problems = x.shape
    mean = float(x.mean())
    if seeds == problems == 1:  # one number: no interval
        return Interval(mean, mean, mean, confidence, 0.0)
    problem_means = x.mean(axis=0)
    ms_problems = seeds * float(((problem_means - mean) ** 2).sum()) / max(problems - 1, 1)
    if problems == 1:
        variance, df = float(x[:, 0].var(ddof=1)) / seeds, float(seeds - 1)
    elif seeds == 1:
        variance, df = ms_problems / problems, float(problems - 1)
    else:
        seed_means = x.mean(axis=1)
        residual = x - seed_means[:, None] - problem_means[None, :] + mean
        ms_seeds = problems * float(((seed_means - mean) ** 2).sum()) / (seeds - 1)
        ms_residual = float((residual**2).sum()) / ((seeds - 1) * (problems - 1))
        combined = ms_seeds + ms_problems - ms_residual
        if combined >= max(ms_seeds, ms_problems):
            parts = ms_seeds**2 / (seeds - 1) + ms_problems**2 / (problems - 1)
            parts += ms_residual**2 / ((seeds - 1) * (problems - 1))
            df = combined**2 / parts if parts > 0 else float("inf")
            if ms_seeds - ms_residual >= combined / 2:  # the seeds' part dominates: Satterthwaite overstates its df
                df = float(seeds - 1)
        elif ms_seeds >= ms_problems:  # S P var(mean) is at least each main mean square's expectation
            combined, df = ms_seeds, float(seeds - 1)
        else:
            combined, df = ms_problems, float(problems - 1)
        variance = combined / (seeds * problems)
    if variance <= 0:
        return Interval(mean, mean, mean, confidence, float("inf"))
    from scipy import stats  # loaded when an interval is computed, not with training

    half = float(stats.t.ppf(0.5 + confidence / 2, df)) * variance**0.5
    return Interval(mean, mean - half, mean + half, confidence, df)


def paired_difference(first: np.ndarray, second: np.ndarray, scale: float = 1.0, confidence: float = 0.95) -> Interval:
    """``first - scale * second``, paired on problems and, where both are seeds x problems, on the seed's index
    (runs of one seed share their data order and sampling seed); a 1-D ``second`` (one model, such as the start) is
    subtracted from every seed's row."""
    a, b = np.asarray(first, dtype=float), np.asarray(second, dtype=float)
    if a.shape[-1] != b.shape[-1]:
        raise ValueError(f"Paired on problems: {a.shape[-1]} problems against {b.shape[-1]}.")
    if b.ndim == 2 and a.shape[0] != b.shape[0]:
        raise ValueError(f"Paired on seeds: {a.shape[0]} seeds against {b.shape[0]}.")
    return crossed_interval(np.atleast_2d(a) - scale * np.atleast_2d(b), confidence)


def seed_range(values: Sequence[float]) -> dict[str, float]:
    """Where only the seeds' spread is known: their mean and min-max range (a range, not an interval)."""
    array = np.asarray(values, dtype=float)
    return {"mean": float(array.mean()), "low": float(array.min()), "high": float(array.max())}
