import itertools
import math
from itertools import combinations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from records import records

from poly_epo_trl.evaluation.metrics import answer_diversity, majority_vote, pass_at_k, powers_of_two_up_to


@given(st.integers(1, 12), st.data())
def test_pass_at_k_equals_brute_force_over_subsets(n, data):
    c = data.draw(st.integers(0, n))
    k = data.draw(st.integers(1, n))
    outcomes = [True] * c + [False] * (n - c)
    subsets = list(combinations(range(n), k))
    brute = sum(any(outcomes[i] for i in s) for s in subsets) / len(subsets)
    assert pass_at_k(n, c, k) == pytest.approx(brute, abs=1e-12)


def test_pass_at_k_is_stable_for_large_n():
    assert pass_at_k(10_000, 1, 1) == pytest.approx(1e-4)
    assert 0 < pass_at_k(10_000, 3, 5000) < 1
    with pytest.raises(ValueError, match="pass@k"):
        pass_at_k(4, 5, 1)


def test_diversity_and_votes():
    stats = answer_diversity([(1, 2), (1, 2), (3, 4), (5, 6)], num_samples=8)
    assert stats["distinct_correct"] == 3
    assert stats["top_answer_share"] == 2 / 8
    assert 2.8 < stats["effective_answers"] < 3
    assert answer_diversity([], 8) == {"distinct_correct": 0.0, "effective_answers": 0.0, "top_answer_share": 0.0}
    assert majority_vote(["7", None, "7", "8"]) == ("7", 0.5)
    assert powers_of_two_up_to(32) == [1, 2, 4, 8, 16, 32]
    assert powers_of_two_up_to(12) == [1, 2, 4, 8, 12]


def test_interval_labels_say_what_the_interval_is_over():
    from poly_epo_trl.evaluation.report import format_interval, interval_label

    assert interval_label(1, 15) == "95% interval over 15 problems, 1 seed (no seed spread in it)"
    assert interval_label(5, 15) == "95% interval over 5 seeds x 15 problems"
    assert interval_label(3, 19, paired=False) == "range over 3 seeds (min-max, not an interval)"
    assert format_interval({"mean": 0.5, "low": 0.5, "high": 0.5}, 2) == "0.50 (no spread)"
    assert format_interval({"mean": 0.5, "low": 0.25, "high": 0.75}, 2) == "0.50 [0.25, 0.75]"


def test_across_seeds_is_an_interval_over_seeds_and_problems():
    from poly_epo_trl.evaluation.intervals import crossed_interval
    from poly_epo_trl.evaluation.report import across_seeds, problem_metrics, summarize

    def problems(correct: list[int]) -> list[dict]:
        return [problem_metrics([1.0] * c + [0.0] * (4 - c), ["a"] * 4, [0, 1, 2, 3]) for c in correct]

    runs = [summarize(problems([c, c + 1]), num_resamples=10) for c in (0, 1, 2)]  # 3 seeds x 2 problems
    combined = across_seeds(runs)
    assert combined["num_seeds"] == 3 and combined["ks"] == [1, 2, 4]
    assert combined["interval"] == "95% interval over 3 seeds x 2 problems"
    expected = crossed_interval([[c / 4, (c + 1) / 4] for c in (0, 1, 2)]).within(0.0, 1.0)  # a rate: in [0, 1]
    assert combined["pass_at_k"]["mean"][0] == pytest.approx(0.375)
    assert (combined["pass_at_k"]["low"][0], combined["pass_at_k"]["high"][0]) == pytest.approx(
        (expected.low, expected.high)
    )
    assert combined["pass_at_k"]["high"][0] - combined["pass_at_k"]["low"][0] > 0.5  # 3 seeds: 2 df, wide
    one_problem = across_seeds([summarize(problems([c]), num_resamples=10) for c in (1, 2, 3)])
    seeds = crossed_interval([[0.25], [0.5], [0.75]])  # the seeds' t interval, df 2
    assert seeds.df == 2 and seeds.low < 0.25
    assert one_problem["pass_at_k"]["low"][0] == pytest.approx(max(seeds.low, 0.0))
    one = across_seeds(runs[:1])
    assert one["interval"].endswith("1 seed (no seed spread in it)")
    with pytest.raises(ValueError, match="different sample counts"):
        across_seeds([runs[0], summarize([{**problems([1])[0], "num_samples": 2}], 10)])


@settings(deadline=None)  # the first call imports scikit-learn
@given(st.data())
def test_adjusted_rand_index_equals_scikit_learn(data):
    from sklearn.metrics import adjusted_rand_score

    from poly_epo_trl.evaluation.metrics import adjusted_rand_index

    n = data.draw(st.integers(1, 12))
    a = data.draw(st.lists(st.integers(0, 4), min_size=n, max_size=n))
    b = data.draw(st.lists(st.sampled_from([0, 1, 2, 100]), min_size=n, max_size=n))
    assert adjusted_rand_index(a, b) == pytest.approx(adjusted_rand_score(a, b), abs=1e-12)
    assert adjusted_rand_index(a, a) == 1.0
    assert adjusted_rand_index([1, 1, 2, 2], [7, 7, 3, 3]) == 1.0  # the ids' names do not matter


def test_one_model_scored_once_per_sampling_seed_is_pooled_as_one_run():
    """A model's evaluations (one per seed's sampling seed) pooled per prompt: samples and correct samples summed,
    answers counted together, distinct correct answers the mean (compared at the runs' n)."""
    from poly_epo_trl.evaluation.report import pooled_records, reported_ks

    first = records([1, 8], [1.0, 3.0])
    second = records([3, 8], [2.0, 4.0])
    for one, counts in ((first, {"a": 1}), (second, {"a": 2, "b": 1})):
        one[0]["correct_answer_counts"] = counts
        one[1]["correct_answer_counts"] = {}
    pooled = pooled_records([first, second])[0]
    assert (pooled["num_samples"], pooled["num_correct"], pooled["distinct_correct_clusters"]) == (16, 4, 1.5)
    assert pooled["correct_answer_counts"] == {"a": 3, "b": 1}
    assert reported_ks(128) == [1, 2, 4, 8, 16, 32, 64]


def test_records_give_seeds_x_problems_tables_their_summaries_and_paired_differences():
    """Several runs' per-problem records: pass@k from the counts at each reported k, the distinct correct clusters,
    each with the crossed interval of the seeds x problems table; differences paired on problems and seeds, or
    against one run (a start) subtracted from every seed's row."""
    from poly_epo_trl.evaluation.intervals import crossed_interval, paired_difference
    from poly_epo_trl.evaluation.metrics import pass_at_k
    from poly_epo_trl.evaluation.report import records_difference, records_summary, records_table

    runs = [records([s, 2 + s, 8, 0], [1.0 + s, 2.0, 3.0, 0.0]) for s in range(3)]
    start = records([2, 2, 2, 2], [1.0, 1.0, 1.0, 1.0])
    table = records_table(runs, "pass_at_k", 2)
    assert table.shape == (3, 4) and table[1, 0] == pass_at_k(8, 1, 2)
    summary = records_summary(runs, [1, 2, 4])
    assert summary["pass_at_k"]["mean"][1] == pytest.approx(crossed_interval(table).mean)
    assert summary["distinct_correct_clusters"]["low"] == pytest.approx(
        max(0.0, crossed_interval(records_table(runs, "distinct_correct_clusters")).low)
    )
    against_start = records_difference(runs, start, [4])
    expected = paired_difference(records_table(runs, "pass_at_k", 4), records_table([start], "pass_at_k", 4)[0])
    assert against_start["pass@4"] == expected.as_dict()
    between = records_difference(runs, runs[::-1], [1])
    assert between["pass@1"]["mean"] == pytest.approx(0.0) and set(between) == {"pass@1", "distinct correct"}


MODEBENCH_COUNTS = ([4, 2, 1, 1], [8], [1, 1], [3, 3], [2, 1, 1, 1], [5, 3], [2, 2, 2])


@pytest.mark.parametrize("counts", MODEBENCH_COUNTS)
def test_pcmd_is_modebench_mode_diversity(counts):
    """ModeBench's own cases (``tests/test_mode_diversity.py``: D_mode = 1 - sum_m C(n_m, 2) / C(K, 2), and the
    fraction of pairs of correct samples in different modes), through the answer judge's keys."""
    from poly_epo_trl.evaluation.report import pcmd

    answers = {str(m): n for m, n in enumerate(counts)}
    total = sum(counts)
    expected = 1 - sum(math.comb(n, 2) for n in counts) / math.comb(total, 2)
    labels = [m for m, n in enumerate(counts) for _ in range(n)]
    pairs = list(itertools.combinations(labels, 2))
    assert pcmd(answers) == pytest.approx(expected, rel=1e-12)
    assert pcmd(answers) == pytest.approx(sum(a != b for a, b in pairs) / len(pairs), rel=1e-12)


def test_pcmd_pins_modebench_numbers_and_its_undefined_problems():
    """Counts {2, 1} give 2/3 (the plug-in 1 - sum q^2 gave 4/9); 1/2 with 0.5 and 3+7 with 7+3 are one mode each;
    fewer than two correct samples: undefined (None), left out of the mean, as ModeBench's ``cell_summary`` leaves
    them; N_eff = 1 / (1 - D) of the mean, None at 1 (ModeBench's ``effective_modes``: 0 -> 1, 0.5 -> 2)."""
    from poly_epo_trl.evaluation.report import effective_modes, pcmd, problem_metrics, summarize

    assert pcmd({"a": 2, "b": 1}) == pytest.approx(2 / 3)
    assert pcmd({"1/2": 1, "0.5": 1}) == 0 and pcmd({"3+7": 1, "7+3": 1}) == 0
    assert pcmd({"6": 6}) == 0 and pcmd({"a": 1, "b": 1, "c": 1, "d": 1}) == 1
    assert pcmd({}) is None and pcmd({"a": 1}) is None
    assert effective_modes(0.0) == 1 and effective_modes(0.5) == 2
    assert effective_modes(1.0) is None and effective_modes(None) is None
    # 6 correct samples: 1/2 twice with 0.5 once, 3 twice, 3+7 once: modes {3, 2, 1}, D = 1 - (6 + 2) / 30 = 11/15
    rewards = [1, 1, 1, 0, 1, 1, 1, 0]
    answers = ["1/2", "0.5", "3", "9", "3", "1/2", "3+7", None]
    defined = problem_metrics(rewards, answers, None)
    assert defined["pcmd"] == pytest.approx(11 / 15)
    one_correct = problem_metrics([1] + [0] * 7, ["1"] * 8, None)
    none_correct = problem_metrics([0] * 8, ["1"] * 8, None)
    assert one_correct["pcmd"] is None and none_correct["pcmd"] is None
    summary = summarize([defined, one_correct, none_correct], num_resamples=10)
    assert summary["pcmd"]["mean"] == pytest.approx(11 / 15)  # not averaged with zeros
    assert summary["pcmd_problems"] == 1
    assert summary["effective_modes"]["mean"] == pytest.approx(15 / 4)


def test_pcmd_is_recomputed_from_a_stored_record():
    """A record written under the earlier plug-in definition reads as ModeBench's PCMD from its answer counts."""
    from poly_epo_trl.evaluation.report import records_difference, records_table, with_modes

    old = {"num_samples": 3, "num_correct": 3, "pcmd": 4 / 9, "correct_answer_counts": {"a": 2, "b": 1}}
    assert with_modes(old)["pcmd"] == pytest.approx(2 / 3)
    lone = {"num_samples": 3, "num_correct": 1, "pcmd": 0.0, "correct_answer_counts": {"a": 1}}
    table = records_table([[old, lone]], "pcmd")
    assert table[0, 0] == pytest.approx(2 / 3) and math.isnan(table[0, 1])
    diff = records_difference([[old, lone]], [[lone | {"correct_answer_counts": {"a": 3}}, old]], [1])
    assert diff["pcmd"]["mean"] == pytest.approx(2 / 3 - (0 + 2 / 3) / 2)  # each run's ModeBench cell


def test_pcmd_across_seeds_is_the_mean_of_the_seeds_modebench_cells():
    """Three seeds: cells 2/3 (one problem defined), (1 + 0) / 2 and none (no problem with two correct samples): the
    mean is over the two defined cells, with a t interval over them; the support is (1 + 2 + 0) / 3 a seed. A seed
    whose every problem is undefined does not pull the mean to 0."""
    from poly_epo_trl.evaluation.intervals import crossed_interval
    from poly_epo_trl.evaluation.report import across_seeds, pcmd_cells, problem_metrics, problem_record

    def record(counts):  # four samples: the correct ones' answers as counted, the rest wrong
        answers = [a for a, n in counts.items() for _ in range(n)]
        rewards = [1.0] * len(answers) + [0.0] * (4 - len(answers))
        return problem_record(problem_metrics(rewards, answers + ["x"] * (4 - len(answers)), None))

    seeds = [
        [record({"a": 2, "b": 1}), record({"a": 1})],
        [record({"a": 1, "b": 1}), record({"a": 3})],
        [record({}), record({"b": 1})],
    ]
    assert pcmd_cells(seeds) == [(pytest.approx(2 / 3), 1), (0.5, 2), (None, 0)]
    summaries = [{"num_problems": 2, "num_samples": 4, "ks": [1, 2, 4], "problems": run} for run in seeds]
    found = across_seeds(summaries)
    expected = crossed_interval([[2 / 3], [0.5]]).within(0.0, 1.0)
    assert found["pcmd"]["mean"] == pytest.approx(7 / 12) and found["pcmd"]["high"] == pytest.approx(expected.high)
    assert found["pcmd_problems"] == pytest.approx(1.0)
    assert found["effective_modes"]["mean"] == pytest.approx(1 / (1 - 7 / 12))


def test_majority_votes_on_the_answer_judges_keys():
    """1/2, 0.5 and 2/4 are one vote, 3+7 and 7+3 another: the text vote would crown the wrong "3" (two votes
    against one each); by the judge's keys the right answer wins with 3 of 5, and 3+7 with 7+3 beats 5+5."""
    from poly_epo_trl.evaluation.report import problem_metrics

    fractions = problem_metrics([1, 1, 1, 0, 0], ["1/2", "0.5", "2/4", "3", "3"], None)
    assert fractions["maj_at_k"][-1] == 1.0 and fractions["vote_share"] == pytest.approx(3 / 5)
    sums = problem_metrics([1, 1, 0, 0, 0], ["3+7", "7+3", "5+5", "4+4", None], None)
    assert sums["maj_at_k"][-1] == 1.0 and sums["vote_share"] == pytest.approx(2 / 5)
