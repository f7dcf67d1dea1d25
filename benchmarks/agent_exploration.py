"""The agent example's science check: GRPO and Poly-EPO train a tool-calling agent (``environment_factory``) over
several seeds; the prime-pair targets checked on the means.

Usage: python benchmarks/agent_exploration.py [--seeds 0 1 2 3 4] [--steps 150] [--out DIR]
Targets, on held-out sums: Poly-EPO's distinct successful plans >= 2x GRPO's with pass@1 at most 3 points below;
Poly-EPO's pass@k >= GRPO's for every k >= 4; GRPO's pass@k at the largest k below the warm start's.
Every number is a mean over seeds and held-out problems with its 95% interval over both (``evaluation.intervals``:
seeds x problems, the two-way random-effects t interval); results.json has each seed's per-problem records.
"""

from __future__ import annotations

import sys

from demo_diversity import checks

from poly_epo_trl.commands.demo.agent import main


def run(argv: list[str]) -> dict[str, bool]:
    defaults = ["--seeds", "0", "1", "2", "3", "4", "--eval-samples", "64", "--out", "outputs/agent_benchmark"]
    report = main([*defaults, *argv])
    print()
    verdicts = checks(report, 2.0, large_k=True)
    print(f"every target met: {all(verdicts.values())}")
    return verdicts


if __name__ == "__main__":
    run(sys.argv[1:])
