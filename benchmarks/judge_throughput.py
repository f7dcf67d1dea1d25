"""Judge throughput against a fake OpenAI-compatible server with a fixed latency, at several concurrency levels.

Usage: python benchmarks/judge_throughput.py [--groups 128] [--latency 0.05]
Prints groups per second and the ratio to the ideal ceil(G / concurrency) * latency (target: within 1.2x).
The server is an httpx2.MockTransport, so the figure is our client's overhead (prompt, HTTP, JSON, retries
machinery), not the network's.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import time

import httpx2

from poly_epo_trl.judges import OpenAICompatibleJudge

COMPLETIONS = [f"Approach {i}: a worked solution with a few lines of reasoning. \\boxed{{{i}}}" for i in range(8)]
REPLY = json.dumps({str(i + 1): {"strategy": "s", "cluster_id": i % 3 + 1} for i in range(8)})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=128)
    parser.add_argument("--latency", type=float, default=0.05)
    args = parser.parse_args()

    async def server(request: httpx2.Request) -> httpx2.Response:
        await asyncio.sleep(args.latency)
        return httpx2.Response(200, json={"choices": [{"message": {"content": REPLY}}]})

    print(f"{args.groups} groups of 8, server latency {args.latency * 1000:.0f} ms")
    print(f"{'concurrency':>12}{'seconds':>10}{'ideal':>10}{'groups/s':>10}{'ratio':>8}")
    for concurrency in (1, 8, 32, 64, 128):
        judge = OpenAICompatibleJudge(
            "http://judge/v1", "m", transport=httpx2.MockTransport(server), max_concurrency=concurrency
        )
        groups = [(f"Problem {g}", COMPLETIONS) for g in range(args.groups)]
        start = time.perf_counter()
        labels = judge.cluster_groups(groups)
        elapsed = time.perf_counter() - start
        assert len(labels) == args.groups and all(len(x) == 8 for x in labels)
        ideal = math.ceil(args.groups / concurrency) * args.latency
        print(f"{concurrency:>12}{elapsed:>10.2f}{ideal:>10.2f}{args.groups / elapsed:>10.1f}{elapsed / ideal:>7.2f}x")


if __name__ == "__main__":
    main()
