"""Per-problem records as an evaluation keeps them (``report.problem_record``), for the statistics' tests."""


def records(correct: list[int], distinct: list[float], n: int = 8) -> list[dict]:
    """One evaluation's per-problem records: each problem's correct samples of ``n`` and its distinct correct
    answers."""
    return [
        {"prompt": f"p{i}", "num_samples": n, "num_correct": c, "distinct_correct_clusters": d}
        for i, (c, d) in enumerate(zip(correct, distinct, strict=True))
    ]
