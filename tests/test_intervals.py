"""The intervals the evaluation reports cover at their stated rate: checked by simulation at the seed and problem
counts the benchmarks use, on data shaped like theirs (per-problem rates, a training seed's effect on every problem,
n samples per problem, the unbiased pass@k estimator)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import expit, gammaln, logit

from poly_epo_trl.evaluation.intervals import Interval, crossed_interval, paired_difference, seed_range
from poly_epo_trl.evaluation.metrics import pass_at_k
from poly_epo_trl.evaluation.report import across_seeds, interval_label, summarize


def pass_at_k_table(n: int, correct: np.ndarray, k: int) -> np.ndarray:
    """The unbiased pass@k estimate 1 - C(n - c, k) / C(n, k) of every cell."""
    wrong = n - correct
    log_ratio = gammaln(wrong + 1) - gammaln(wrong - k + 1) - gammaln(n + 1) + gammaln(n - k + 1)
    return np.where(wrong < k, 1.0, 1.0 - np.exp(np.where(wrong < k, 0.0, log_ratio)))


class Population:
    """Problems with Beta(a, b) rates, a seed's shift of every problem's logit (sd ``seed_sd``), a seed-by-problem
    wobble (sd 0.3), and n samples a problem. ``mean(k)``: pass@k's mean over the whole population, by a large
    Monte Carlo draw."""

    def __init__(self, a: float, b: float, seed_sd: float, n: int = 128) -> None:
        self.a, self.b, self.seed_sd, self.n = a, b, seed_sd, n

    def rates(self, rng: np.random.Generator, seeds: int, problems: int) -> np.ndarray:
        base = logit(np.clip(rng.beta(self.a, self.b, size=problems), 1e-6, 1 - 1e-6))
        shift = rng.normal(0.0, self.seed_sd, size=(seeds, 1))
        return expit(base[None, :] + shift + rng.normal(0.0, 0.3, size=(seeds, problems)))

    def table(self, rng: np.random.Generator, seeds: int, problems: int, k: int) -> np.ndarray:
        return pass_at_k_table(self.n, rng.binomial(self.n, self.rates(rng, seeds, problems)), k)

    def mean(self, k: int) -> float:
        rates = self.rates(np.random.default_rng(12345), 2_000, 1_000)  # over seeds and problems both
        return float((1.0 - (1.0 - rates) ** k).mean())


def coverage(population: Population, seeds: int, problems: int, k: int, repeats: int = 600) -> float:
    rng = np.random.default_rng(seeds * 1000 + problems + k)
    truth = population.mean(k)
    hits = 0
    for _ in range(repeats):
        interval = crossed_interval(population.table(rng, seeds, problems, k))
        hits += interval.low <= truth <= interval.high
    return hits / repeats


@pytest.mark.parametrize(
    ("seeds", "problems", "k", "population"),
    [
        (3, 66, 1, Population(1.0, 1.0, 0.3)),  # the real-LM benchmark: 3 seeds x 66 held-out prompts, pass@1
        (3, 66, 64, Population(0.3, 3.0, 0.3)),  # its pass@64 with many rarely answered prompts
        (3, 66, 64, Population(0.3, 3.0, 1.0)),  # a strong seed effect: the seeds' part dominates
        (3, 66, 1, Population(1.0, 1.0, 1.0)),  # the seeds' part dominates pass@1 (Satterthwaite's df alone: 0.91)
        (3, 66, 1, Population(1.0, 1.0, 1.5)),  # seeds dominating further
        (5, 15, 1, Population(1.0, 1.0, 1.5)),  # the CPU demo's shape, seeds dominating
        (3, 19, 1, Population(1.0, 1.0, 0.3)),  # the one-letter design: 19 prompts
        (5, 15, 1, Population(1.0, 1.0, 0.5)),  # the CPU demo: 5 seeds x 15 numbers
        (3, 66, 1, Population(1.0, 1.0, 0.0)),  # no seed effect at all
    ],
)
def test_the_stated_95_percent_interval_covers_about_95_percent(seeds, problems, k, population):
    assert coverage(population, seeds, problems, k) >= 0.93


class PairedPopulation:
    """Two methods on the same problems: each seed shifts each method's logits on its own (sd ``seed_sd``), the
    second method adds ``gain`` to every logit; ``difference(k)`` is the population's pass@k, first minus second."""

    def __init__(self, a: float, b: float, seed_sd: float, gain: float = 0.5, n: int = 128) -> None:
        self.one = Population(a, b, seed_sd, n)
        self.gain = gain

    def rates(self, rng: np.random.Generator, seeds: int, problems: int) -> tuple[np.ndarray, np.ndarray]:
        base = logit(np.clip(rng.beta(self.one.a, self.one.b, size=problems), 1e-6, 1 - 1e-6))

        def method(gain: float) -> np.ndarray:
            shift = rng.normal(0.0, self.one.seed_sd, size=(seeds, 1))
            return expit(base[None, :] + gain + shift + rng.normal(0.0, 0.3, size=(seeds, problems)))

        return method(0.0), method(self.gain)

    def tables(self, rng: np.random.Generator, seeds: int, problems: int, k: int) -> list[np.ndarray]:
        n = self.one.n
        return [pass_at_k_table(n, rng.binomial(n, rates), k) for rates in self.rates(rng, seeds, problems)]

    def difference(self, k: int) -> float:
        first, second = self.rates(np.random.default_rng(12345), 2_000, 1_000)
        return float((1.0 - (1.0 - first) ** k).mean() - (1.0 - (1.0 - second) ** k).mean())


@pytest.mark.parametrize(
    ("k", "population"),
    [
        (1, PairedPopulation(1.0, 1.0, 0.3)),  # the real-LM benchmark's pass@1, Poly-EPO - GRPO
        (64, PairedPopulation(0.3, 3.0, 0.3)),  # its pass@64
        (1, PairedPopulation(1.0, 1.0, 1.0)),  # the seeds' part dominates the difference
        (64, PairedPopulation(0.3, 3.0, 1.0)),
    ],
)
def test_a_paired_difference_covers_about_95_percent(k, population):
    """Paired on seed index and problems, at the real-LM benchmark's 3 seeds x 66 prompts."""
    rng, truth, hits, repeats = np.random.default_rng(k), population.difference(k), 0, 600
    for _ in range(repeats):
        first, second = population.tables(rng, 3, 66, k)
        interval = paired_difference(first, second)
        hits += interval.low <= truth <= interval.high
    assert hits / repeats >= 0.93


def test_a_seed_range_would_not_cover():
    """What the intervals replaced: three seeds' min-max (a percentile bootstrap of 3 values is exactly that) covers
    the mean over seeds far less often than 95%."""
    population, rng = Population(1.0, 1.0, 0.5), np.random.default_rng(7)
    truth = population.mean(1)
    hits = 0
    for _ in range(400):
        per_seed = population.table(rng, 3, 66, 1).mean(axis=1)
        found = seed_range(per_seed)
        hits += found["low"] <= truth <= found["high"]
    assert hits / 400 < 0.85


def test_one_seed_is_an_interval_over_problems_only():
    """With one seed the seed spread cannot be seen: the interval is the problems' t interval (df P - 1), and it
    under-covers the mean over seeds when seeds differ, which its label says."""
    table = np.array([[0.0, 0.5, 1.0, 0.5]])
    found = crossed_interval(table)
    assert found.df == 3 and found.mean == 0.5
    half = 3.182446305284263 * (np.var(table[0], ddof=1) / 4) ** 0.5  # t(0.975, 3)
    assert found.high - found.mean == pytest.approx(half)
    assert "no seed spread" in interval_label(1, 4)


def test_paired_differences_and_contrasts():
    rng = np.random.default_rng(0)
    hard = rng.uniform(0, 1, size=40)  # problems differ a lot; a method adds the same 0.1 to each
    first = np.stack([hard + 0.1 + rng.normal(0, 0.01, 40) for _ in range(3)])
    second = np.stack([hard + rng.normal(0, 0.01, 40) for _ in range(3)])
    paired = paired_difference(first, second)
    assert paired.clears(0.05) and paired.high < 0.15  # pairing removes the problems' spread
    unpaired = crossed_interval(first).low - crossed_interval(second).high
    assert unpaired < 0  # apart, the two means' intervals overlap
    start = hard  # one model (the start) subtracted from every seed's row
    assert paired_difference(first, start).clears(0.05)
    ratio = paired_difference(2.0 * second + 1.0, second, scale=1.5)  # first - 1.5 x second
    assert ratio.clears(0.0)
    with pytest.raises(ValueError, match="Paired on problems"):
        paired_difference(first, second[:, :5])


def test_edges():
    assert crossed_interval(np.ones((3, 5))) == Interval(1.0, 1.0, 1.0, 0.95, float("inf"))
    with pytest.raises(ValueError, match="NaN"):
        crossed_interval(np.array([[1.0, np.nan], [0.0, 1.0]]))
    with pytest.raises(ValueError, match="seeds x problems"):
        crossed_interval(np.ones(3))
    assert Interval(0.5, 0.1, 0.9, 0.95, 2).clears(0.0) and not Interval(0.5, 0.1, 0.9, 0.95, 2).clears(0.2)
    assert Interval(-0.5, -0.9, -0.1, 0.95, 2).clears(0.0, above=False)
    near_one = crossed_interval(np.array([[1.0, 1.0, 0.9], [1.0, 0.8, 1.0], [1.0, 1.0, 1.0]]))
    assert near_one.high > 1.0 and near_one.within(0.0, 1.0).high == 1.0  # a rate's interval kept in [0, 1]
    assert near_one.within(0.0, 1.0).low == near_one.low


def records(correct: list[int], n: int = 4) -> list[dict]:
    return [
        {
            "num_samples": n,
            "num_correct": c,
            "pass_at_k": [pass_at_k(n, c, k) for k in (1, 2, 4)],
            "maj_at_k": [float(c > n // 2)] * 3,
            "vote_share": 0.5,
            "distinct_clusters": 2,
            "distinct_correct_clusters": min(c, 2),
            "correct_answer_counts": {"a": c} if c else {},
        }
        for c in correct
    ]


def test_across_seeds_uses_the_per_problem_records_and_says_so():
    runs = [summarize(records(c), num_resamples=10) for c in ([1, 2, 3, 4], [0, 2, 3, 4], [1, 1, 3, 4])]
    combined = across_seeds(runs)
    assert combined["interval"] == "95% interval over 3 seeds x 4 problems"
    table = [[pass_at_k(4, c, 1) for c in run] for run in ([1, 2, 3, 4], [0, 2, 3, 4], [1, 1, 3, 4])]
    expected = crossed_interval(table)
    assert combined["pass_at_k"]["low"][0] == pytest.approx(expected.low)
    assert combined["pass_at_k"]["mean"][0] == pytest.approx(np.mean(table))
    assert len(runs[0]["problems"]) == 4 and runs[0]["problems"][2]["correct_answer_counts"] == {"a": 3}
    older = [{k: v for k, v in run.items() if k != "problems"} for run in runs]  # results kept before records
    ranged = across_seeds(older)
    assert ranged["interval"].startswith("range over 3 seeds")
    means = [run["pass_at_k"]["mean"][0] for run in runs]
    assert (ranged["pass_at_k"]["low"][0], ranged["pass_at_k"]["high"][0]) == (min(means), max(means))
