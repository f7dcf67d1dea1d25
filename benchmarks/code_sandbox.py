"""Sandbox cost: programs per second through the code reward against a plain ``python -c`` subprocess, same run.

Usage: python benchmarks/code_sandbox.py [--programs 64] [--workers 1 2]
Each program is a correct two-test solution; the plain run executes the same solution and tests with this
interpreter and no isolation. Runs alternate between the two, and the ratio is of their medians.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

from poly_epo_trl.rewards import CodeReward

CODE = "def add(a, b):\n    return a + b\n"
TESTS = ["assert add(1, 2) == 3", "assert add(-2, 2) == 0"]


def plain(_: int) -> bool:
    program = CODE + "\n".join(TESTS)
    return subprocess.run([sys.executable, "-c", program], capture_output=True).returncode == 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--programs", type=int, default=64)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    reward = CodeReward()
    print(f"sandbox: {reward.sandbox.describe()}; {os.cpu_count()} CPUs")
    completion = f"```python\n{CODE}```"
    print(f"{'workers':>8}{'plain/s':>10}{'sandbox/s':>11}{'ms plain':>10}{'ms sandbox':>12}{'cost':>8}")
    for workers in args.workers:
        plain_times, sandbox_times = [], []
        for _ in range(args.repeats):
            with ThreadPoolExecutor(workers) as pool:
                start = time.perf_counter()
                assert all(pool.map(plain, range(args.programs)))
                plain_times.append(time.perf_counter() - start)
            reward.max_workers = workers
            start = time.perf_counter()
            rewards = reward([completion] * args.programs, [TESTS] * args.programs)
            sandbox_times.append(time.perf_counter() - start)
            assert rewards == [1.0] * args.programs
        plain_s, sandbox_s = statistics.median(plain_times), statistics.median(sandbox_times)
        n = args.programs
        print(
            f"{workers:>8}{n / plain_s:>10.1f}{n / sandbox_s:>11.1f}{1000 * plain_s / n:>10.1f}"
            f"{1000 * sandbox_s / n:>12.1f}{sandbox_s / plain_s:>7.2f}x"
        )


if __name__ == "__main__":
    main()
