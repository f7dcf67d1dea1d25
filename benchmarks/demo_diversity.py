"""The demo's science check: GRPO, GRPO+DIV and Poly-EPO over several seeds, printed as ratios.

Usage: python benchmarks/demo_diversity.py [--seeds 0 1 2] [--steps 200] [--out outputs/demo_benchmark]
Target (issue 7): Poly-EPO's distinct correct answers per held-out prompt >= 1.4x GRPO's, pass@1 within 3 points.
"""

from __future__ import annotations

import sys

from poly_epo_trl.demo.run import main


def run(argv: list[str]) -> None:
    defaults = ["--seeds", "0", "1", "2", "--out", "outputs/demo_benchmark"]
    report = main(defaults + argv)
    summary = report["summary"]
    grpo, poly = summary["grpo"], summary["poly_epo"]
    ratio = report["distinct_ratio_poly_epo_vs_grpo"]
    gap = report["pass_at_1_gap_points"]
    print()
    print(
        f"distinct correct per prompt: Poly-EPO {poly['distinct_correct']['mean']:.2f} vs GRPO "
        f"{grpo['distinct_correct']['mean']:.2f}: ratio {ratio:.2f}x (target >= 1.4x)"
    )
    print(
        f"pass@1: Poly-EPO {poly['pass_at_1']['mean']:.3f} vs GRPO {grpo['pass_at_1']['mean']:.3f}: "
        f"{gap:+.1f} points (target within 3)"
    )
    note = "" if abs(gap) <= 3 else f" (pass@1 {'higher' if gap > 0 else 'lower'} by {abs(gap):.1f} points)"
    print(f"target met: {ratio >= 1.4 and abs(gap) <= 3}{note}")


if __name__ == "__main__":
    run(sys.argv[1:])
