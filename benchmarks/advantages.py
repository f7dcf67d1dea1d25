"""Closed form vs enumeration for the polychromic marginal set advantage on 128 groups.

Usage: python benchmarks/advantages.py [--groups 128] [--repeats 50]
Targets: N=8, n=4 under 2 ms; N=64, n=16 under 20 ms, on a 2-core CPU.
"""

from __future__ import annotations

import argparse
import math
import time

import torch

from poly_epo_trl.advantages import marginal_set_advantages

CASES = [(8, 4), (16, 8), (32, 16), (64, 16)]
MAX_ENUMERATED = 20_000


def best_time(fn, repeats: int) -> float:
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=50)
    args = parser.parse_args()
    torch.set_num_threads(1)
    gen = torch.Generator().manual_seed(0)
    print(
        f"{'N':>4} {'n':>4} {'sets/group':>12} {'closed form':>12} {'enumerate':>12} {'ratio':>8} {'max |diff|':>11}"
    )
    for big_n, n in CASES:
        rewards = (torch.rand(args.groups, big_n, generator=gen) > 0.5).float()
        clusters = torch.randint(0, 5, (args.groups, big_n), generator=gen)
        clusters[torch.rand(args.groups, big_n, generator=gen) < 0.1] = 100
        num_sets = math.comb(big_n, n)

        def closed(rewards=rewards, clusters=clusters, n=n):
            return marginal_set_advantages(rewards, clusters, n, estimator="closed_form")

        t_closed = best_time(closed, args.repeats)
        if num_sets <= MAX_ENUMERATED:

            def enumerate_(rewards=rewards, clusters=clusters, n=n):
                return marginal_set_advantages(rewards, clusters, n, estimator="enumerate")

            t_enum = best_time(enumerate_, max(2, args.repeats // 10))
            diff = (closed() - enumerate_()).abs().max().item()
            enum_text, ratio_text, diff_text = f"{t_enum * 1e3:9.2f} ms", f"{t_enum / t_closed:7.0f}x", f"{diff:.1e}"
        else:
            enum_text, ratio_text, diff_text = "infeasible", "-", "-"
        print(
            f"{big_n:>4} {n:>4} {num_sets:>12.3g} {t_closed * 1e3:9.3f} ms",
            f"{enum_text:>12} {ratio_text:>8} {diff_text:>11}",
        )
    print("targets: N=8,n=4 closed form < 2 ms; N=64,n=16 closed form < 20 ms")


if __name__ == "__main__":
    main()
