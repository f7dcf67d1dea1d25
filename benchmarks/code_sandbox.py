"""Sandbox throughput: programs per second for code_reward at several pool sizes, and the isolation in effect.

Usage: python benchmarks/code_sandbox.py [--programs 64]
Each program is a correct two-test solution, so every run goes through boot, harness and cleanup.
"""

from __future__ import annotations

import argparse
import os
import time

from poly_epo_trl.rewards import code_reward
from poly_epo_trl.rewards.code import check_code

SOLUTION = "```python\ndef add(a, b):\n    return a + b\n```"
TESTS = ["assert add(1, 2) == 3", "assert add(-2, 2) == 0"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--programs", type=int, default=64)
    args = parser.parse_args()
    _, result = check_code(SOLUTION, TESTS)
    print(f"isolation: {result.isolation}; {os.cpu_count()} CPUs")
    print(f"{'workers':>8}{'programs/s':>12}{'ms/program':>12}{'speed-up':>10}")
    base = None
    for workers in (1, 2, 4, 8):
        start = time.perf_counter()
        rewards = code_reward([SOLUTION] * args.programs, [TESTS] * args.programs, max_workers=workers)
        elapsed = time.perf_counter() - start
        assert rewards == [1.0] * args.programs
        rate = args.programs / elapsed
        base = base or rate
        print(f"{workers:>8}{rate:>12.1f}{1000 / rate:>12.1f}{rate / base:>9.2f}x")


if __name__ == "__main__":
    main()
