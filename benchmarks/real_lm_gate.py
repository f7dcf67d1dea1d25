"""The real-LM benchmark's cheap gate before any training: its start (the warm start every method trains from) on the
held-out prompts at each temperature, with the first seed's sampling seed. Sharpening can cost coverage there only if
a colder start covers less at large k.

    python benchmarks/real_lm_gate.py --temperatures 1.0 0.5 --seeds 100 --out DIR

Takes ``benchmarks/real_lm.py``'s settings; writes ``DIR/gate.json``. The start's evaluation at the comparison's own
temperature is kept for a ``real_lm.py`` run in the same DIR.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import multiprocessing
from dataclasses import asdict
from pathlib import Path
from typing import Any

from real_lm import Settings, die_with_parent, evaluate_start, hardware, keep, parse_args, run_key, warm_start


def gate(s: Settings, out: Path, temperatures: list[float]) -> dict[str, Any]:
    """The cheap gate before any training: the start on the held-out prompts at each temperature (the first seed's
    sampling seed). Sharpening can cost coverage there only if a colder start covers less at large k."""
    out.mkdir(parents=True, exist_ok=True)
    start = warm_start(s, out)
    context = multiprocessing.get_context("spawn")
    settings = [Settings(**{**asdict(s), "temperature": t}) for t in temperatures]
    with concurrent.futures.ProcessPoolExecutor(s.workers, mp_context=context, initializer=die_with_parent) as pool:
        n = len(settings)
        finals = list(pool.map(evaluate_start, settings, [start] * n, [out] * n, [s.seeds[0]] * n))
    result = {"settings": asdict(s), "start_model": start, "hardware": hardware(), "temperatures": {}}
    for t, one, summary in zip(temperatures, settings, finals, strict=True):
        if t == s.temperature:  # the comparison's own start evaluation: kept for it
            keep(out / "kept" / f"start-seed{s.seeds[0]}.json", run_key(one, start, s.seeds[0]), summary)
        result["temperatures"][str(t)] = summary
        ks, means = summary["ks"], summary["pass_at_k"]["mean"]
        row = "  ".join(f"pass@{k} {m:.3f}" for k, m in zip(ks, means, strict=True))
        distinct = summary["distinct_correct_clusters"]["mean"]
        print(f"start at T = {t}: {row}  distinct correct {distinct:.2f}", flush=True)
    (out / "gate.json").write_text(json.dumps(result, indent=2))
    return result


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="Every flag of benchmarks/real_lm.py is taken too (--out, --seeds, ...).",
    )
    parser.add_argument("--temperatures", type=float, nargs="+", metavar="T", required=True)
    args, rest = parser.parse_known_args(argv)
    settings, given = parse_args(rest)
    return gate(settings, given.out, args.temperatures)


if __name__ == "__main__":
    main()
