"""The demo's science check: GRPO, GRPO+DIV and Poly-EPO over several seeds, printed as ratios with intervals.

Usage: python benchmarks/demo_diversity.py [--seeds 0 1 2 3 4] [--steps 200] [--task sum_pair] [--out DIR]
Target (issue 7): Poly-EPO's distinct correct strategies per held-out prompt >= 1.4x GRPO's, pass@1 within 3 points.
Every number is a mean over seeds with a 95% Student-t interval over seeds (results.json has each seed's).
"""

from __future__ import annotations

import sys

from poly_epo_trl.demo.run import LABELS, main
from poly_epo_trl.evaluation.report import format_interval


def run(argv: list[str]) -> None:
    defaults = ["--seeds", "0", "1", "2", "3", "4", "--out", "outputs/demo_benchmark"]
    report = main(defaults + argv)
    summary = report["summary"]
    grpo, poly = summary[LABELS["grpo"]], summary[LABELS["poly_epo"]]
    ratio, gap = report["distinct_ratio_poly_epo_vs_grpo"], report["pass_at_1_gap_points"]

    print()
    print(
        f"distinct correct per prompt: Poly-EPO {format_interval(poly['distinct_correct_clusters'], 2)} vs GRPO "
        f"{format_interval(grpo['distinct_correct_clusters'], 2)}: ratio of means {ratio:.2f}x (target >= 1.4x)"
    )
    print(
        f"pass@1: Poly-EPO {format_interval(poly['pass_at_k'], 3, 0)} vs GRPO "
        f"{format_interval(grpo['pass_at_k'], 3, 0)}: {gap:+.1f} points (target within 3)"
    )
    print(f"target met: {ratio >= 1.4 and abs(gap) <= 3}")


if __name__ == "__main__":
    run(sys.argv[1:])
