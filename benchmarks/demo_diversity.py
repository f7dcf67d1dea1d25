"""The demo's science check: GRPO, GRPO+DIV and Poly-EPO over several seeds, each target checked on the means.

Usage: python benchmarks/demo_diversity.py [--task sum_pair|prime_pair] [--seeds 0 1 2 3 4] [--steps 200] [--out DIR]
Targets, on held-out prompts:
  sum_pair: Poly-EPO's distinct correct strategies >= 1.4x GRPO's, pass@1 at most 3 points below GRPO's.
  prime_pair: the same with >= 2x, and the large-k effect: Poly-EPO's pass@k >= GRPO's for every k >= 4,
  GRPO's pass@k at the largest k below the warm start's.
Every number is a mean over seeds and held-out problems with its 95% interval over both (``evaluation.intervals``:
seeds x problems, the two-way random-effects t interval); results.json has each seed's per-problem records.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from poly_epo_trl.commands.demo.run import LABELS, main
from poly_epo_trl.evaluation.report import format_interval

TARGETS: dict[str, dict[str, Any]] = {
    "sum_pair": {"ratio": 1.4, "large_k": False, "eval_samples": 32},
    "prime_pair": {"ratio": 2.0, "large_k": True, "eval_samples": 64},
}


def checks(report: dict[str, Any], ratio_target: float, large_k: bool) -> dict[str, bool]:
    """Each target's verdict on the means over seeds, printing the numbers behind it."""
    summary = report["summary"]
    warm, grpo, poly = (summary[LABELS[m]] for m in ("warm", "grpo", "poly_epo"))
    ratio, gap = report["distinct_ratio_poly_epo_vs_grpo"], report["pass_at_1_gap_points"]
    print(
        f"distinct correct per prompt: Poly-EPO {format_interval(poly['distinct_correct_clusters'], 2)} vs GRPO "
        f"{format_interval(grpo['distinct_correct_clusters'], 2)}: ratio of means {ratio:.2f}x "
        f"(target >= {ratio_target}x)"
    )
    print(
        f"pass@1: Poly-EPO {format_interval(poly['pass_at_k'], 3, 0)} vs GRPO "
        f"{format_interval(grpo['pass_at_k'], 3, 0)}: {gap:+.1f} points (target >= -3)"
    )
    verdicts = {"distinct ratio": ratio >= ratio_target, "pass@1": gap >= -3}
    if large_k:
        ks = warm["ks"]
        for i, k in enumerate(ks):
            row = "  ".join(
                f"{name} {format_interval(s['pass_at_k'], 3, i)}"
                for name, s in zip(("warm", "GRPO", "Poly-EPO"), (warm, grpo, poly), strict=True)
            )
            print(f"pass@{k}: {row}")
        at_least = [poly["pass_at_k"]["mean"][i] >= grpo["pass_at_k"]["mean"][i] for i, k in enumerate(ks) if k >= 4]
        verdicts["Poly-EPO pass@k >= GRPO's for k >= 4"] = all(at_least)
        verdicts[f"GRPO pass@{ks[-1]} below the warm start's"] = (
            grpo["pass_at_k"]["mean"][-1] < warm["pass_at_k"]["mean"][-1]
        )
    for name, met in verdicts.items():
        print(f"  {'met' if met else 'NOT met'}: {name}")
    return verdicts


def run(argv: list[str]) -> dict[str, bool]:
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--task", default="sum_pair", choices=sorted(TARGETS))
    known, rest = parser.parse_known_args(argv)
    target = TARGETS[known.task]
    defaults = ["--seeds", "0", "1", "2", "3", "4", "--eval-samples", str(target["eval_samples"])]
    report = main([*defaults, "--task", known.task, "--out", f"outputs/demo_benchmark/{known.task}", *rest])
    print()
    verdicts = checks(report, target["ratio"], target["large_k"])
    print(f"every target met: {all(verdicts.values())}")
    return verdicts


if __name__ == "__main__":
    run(sys.argv[1:])
