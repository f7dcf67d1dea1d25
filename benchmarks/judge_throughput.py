"""Judge throughput against a real server process (tests/helpers/judge_server.py on loopback) with a fixed latency per
request, one slot and many slots, at concurrency caps 1 to 128.

Usage: python benchmarks/judge_throughput.py [--groups 256] [--latency 0.05] [--slots 1 16]
Prints groups per second and the ratio to the ideal G * latency / min(cap, slots): the server's own limit, so the
ratio is our client's overhead (prompt, HTTP, streaming, JSON, retry machinery) plus the loopback's.
With one slot the queue the client cannot see grows with the cap; no request may time out (the timeout counts
queueing), which the "timeouts" column shows.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "helpers"))

from judge_server import ServerProcess

from poly_epo_trl.judges import OpenAICompatibleJudge

COMPLETIONS = [f"Approach {i}: a worked solution with a few lines of reasoning. \\boxed{{{i % 3}}}" for i in range(8)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=256)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--slots", type=int, nargs="+", default=[1, 16])
    parser.add_argument("--caps", type=int, nargs="+", default=[1, 8, 32, 64, 128])
    args = parser.parse_args()

    print(f"{args.groups} groups of 8 completions, server latency {args.latency * 1000:.0f} ms per request")
    print(f"{'slots':>6}{'cap':>6}{'seconds':>9}{'ideal':>8}{'groups/s':>10}{'ratio':>8}{'timeouts':>10}{'limit':>7}")
    for slots in args.slots:
        with ServerProcess(slots=slots, latency=args.latency, model="judge") as server:
            for cap in args.caps:
                judge = OpenAICompatibleJudge(
                    server.base_url, "judge", max_concurrency=cap, initial_concurrency=min(8, cap)
                )
                groups = [(f"Problem {slots}-{cap}-{g}", COMPLETIONS) for g in range(args.groups)]
                start = time.perf_counter()
                results = judge.judge_groups(groups)
                elapsed = time.perf_counter() - start
                assert all(r.fallback is None for r in results), "a group fell back"
                stats = judge.pop_stats()
                ideal = args.groups * args.latency / min(cap, slots)
                print(
                    f"{slots:>6}{cap:>6}{elapsed:>9.2f}{ideal:>8.2f}{args.groups / elapsed:>10.1f}"
                    f"{elapsed / ideal:>7.2f}x{stats.get('timeouts', 0):>10}{judge.limiter.limit:>7.1f}"
                )


if __name__ == "__main__":
    main()
