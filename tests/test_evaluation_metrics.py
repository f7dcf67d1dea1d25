from itertools import combinations

import pytest
from hypothesis import given
from hypothesis import strategies as st

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
