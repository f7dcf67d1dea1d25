"""Set-level evaluation metrics: unbiased pass@k, majority vote, answer diversity."""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Hashable, Sequence


def pass_at_k(num_samples: int, num_correct: int, k: int) -> float:
    """Unbiased pass@k = 1 - C(n - c, k) / C(n, k), as a stable product: 1 - prod_{i=n-c+1}^{n} (1 - k / i)."""
    if not 0 <= num_correct <= num_samples or not 1 <= k <= num_samples:
        raise ValueError(f"pass@k needs 0 <= c <= n and 1 <= k <= n, got n={num_samples}, c={num_correct}, k={k}.")
    if num_samples - num_correct < k:
        return 1.0
    return 1.0 - math.prod(1.0 - k / i for i in range(num_samples - num_correct + 1, num_samples + 1))


def powers_of_two_up_to(n: int) -> list[int]:
    """1, 2, 4, ..., and n itself."""
    ks = [2**i for i in range(int(math.log2(n)) + 1)] if n >= 1 else []
    return ks if ks and ks[-1] == n else [*ks, n]


def answer_diversity(correct_answers: Sequence[Hashable], num_samples: int) -> dict[str, float]:
    """Distinct correct answers, their effective number exp(entropy), and the top answer's share of all samples."""
    counts = Counter(correct_answers)
    total = sum(counts.values())
    entropy = -sum(c / total * math.log(c / total) for c in counts.values()) if total else 0.0
    return {
        "distinct_correct": float(len(counts)),
        "effective_answers": math.exp(entropy) if total else 0.0,
        "top_answer_share": max(counts.values()) / num_samples if total else 0.0,
    }


def majority_vote(answers: Sequence[Hashable | None]) -> tuple[Hashable | None, float]:
    """The most common non-empty answer and its vote share among all answers (None, 0 when there is none)."""
    counts = Counter(a for a in answers if a is not None)
    if not counts:
        return None, 0.0
    answer, votes = counts.most_common(1)[0]
    return answer, votes / len(answers)


def _winners_correct(answers: Sequence[Hashable | None], good: set[Hashable]) -> float:
    counts = Counter(a for a in answers if a is not None)
    if not counts:
        return 0.0
    top = max(counts.values())
    winners = [a for a, c in counts.items() if c == top]
    return sum(a in good for a in winners) / len(winners)


def majority_correct(answers: Sequence[Hashable | None], correct: Sequence[bool]) -> float:
    """Whether the most common non-empty answer is correct (an answer is correct when any completion giving it is);
    a tie counts the fraction of tied answers that are correct; no answer at all counts 0."""
    return _winners_correct(answers, {a for a, ok in zip(answers, correct, strict=True) if ok and a is not None})


def majority_at_k(
    answers: Sequence[Hashable | None], correct: Sequence[bool], k: int, num_subsets: int = 200, seed: int = 0
) -> float:
    """maj@k: the majority answer of k of the n samples is correct (judged over all n, as in majority_correct),
    averaged over ``num_subsets`` random k-subsets; exact for k = 1 and k = n."""
    n = len(answers)
    if not 1 <= k <= n:
        raise ValueError(f"maj@k needs 1 <= k <= n, got k={k}, n={n}.")
    good = {a for a, ok in zip(answers, correct, strict=True) if ok and a is not None}
    if k == n:
        return _winners_correct(answers, good)
    if k == 1:
        return sum(a in good for a in answers if a is not None) / n
    rng = random.Random(seed)
    return sum(_winners_correct([answers[i] for i in rng.sample(range(n), k)], good) for _ in range(num_subsets)) / (
        num_subsets
    )


def adjusted_rand_index(a: Sequence[Hashable], b: Sequence[Hashable]) -> float:
    """Hubert and Arabie's adjusted Rand index of two labelings of the same items: 1 for the same partition, about
    0 for unrelated ones. ARI = (sum_ij C(n_ij,2) - E) / (max - E) with E = sum_i C(a_i,2) sum_j C(b_j,2) / C(n,2)
    and max = (sum_i C(a_i,2) + sum_j C(b_j,2)) / 2; 1 when both put everything together or everything apart
    (as scikit-learn defines it)."""
    if len(a) != len(b):
        raise ValueError(f"Two labelings of the same items are needed, got {len(a)} and {len(b)} labels.")
    pairs = Counter(zip(a, b, strict=True))
    index = sum(math.comb(c, 2) for c in pairs.values())
    rows = sum(math.comb(c, 2) for c in Counter(a).values())
    cols = sum(math.comb(c, 2) for c in Counter(b).values())
    total = math.comb(len(a), 2)
    expected = rows * cols / total if total else 0.0
    top = (rows + cols) / 2
    if top == expected:
        return 1.0
    return (index - expected) / (top - expected)
