"""Does the code reward agree with LeetCodeDataset's own evaluator? Canonical solutions and recorded responses.

Usage: python benchmarks/leetcode_agreement.py [--data FILE] [--limit N] [--workers 2] [--json OUT]

For every row: the dataset's evaluator (setup + code + test + check(entry_point) in a plain subprocess) and our
reward (bubblewrap sandbox, verdict in the parent) on the canonical ``completion`` and on the ``response`` (the
evaluator's extraction, the longest ```python block, given to both; and, reported apart, our own extraction of the
whole response). Prints agreement, false negatives and false positives with the reason for each disagreement, and
programs per second for both.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from poly_epo_trl.rewards import CodeReward
from poly_epo_trl.rewards.leetcode import compare, load_rows

DATA = (
    Path(os.environ.get("POLY_EPO_SHARED") or Path(__file__).resolve().parents[2] / "shared")
    / "data"
    / "LeetCodeDataset-v0.2.0-train.jsonl.gz"
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--stride", type=int, default=1, help="take every stride-th row")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--json", type=Path, default=None, help="write the full report here")
    args = parser.parse_args()
    if not args.data.exists():
        parser.error(
            f"no LeetCodeDataset rows at {args.data}: give --data, or set POLY_EPO_SHARED to the folder whose data/ "
            "holds LeetCodeDataset-v0.2.0-train.jsonl.gz (CI has it as ../shared beside the clone)"
        )
    rows = load_rows(args.data, args.limit, args.stride)
    reward = CodeReward(max_workers=1)
    print(f"{len(rows)} rows from {args.data}; sandbox: {reward.sandbox.describe()}")
    report = compare(rows, reward, args.workers)
    for source in ("completion", "response", "response_own_extraction"):
        part = report[source]
        rate = part["agree"] / part["rows"]
        print(
            f"{source:>24}: agree {part['agree']}/{part['rows']} ({rate:.2%}); evaluator passes "
            f"{part['reference_pass']}, reward passes {part['our_pass']}; false negatives "
            f"{part.get('false_negative', 0)}, false positives {part.get('false_positive', 0)}"
        )
        for item in part["disagreements"]:
            print(
                f"    {item['kind']:<15} {item['task_id']}: evaluator {item['reference']!r}; reward {item['ours']!r}"
            )
    n = report["programs"]
    ref_rate, our_rate = n / report["reference_seconds"], n / report["our_seconds"]
    print(
        f"throughput ({args.workers} workers): evaluator {ref_rate:.1f} programs/s, reward {our_rate:.1f} programs/s; "
        f"reward/evaluator time ratio {ref_rate / our_rate:.2f}x"
    )
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
