"""math-verify in a plain worker process: one JSON request per line on stdin, one result per line on stdout.

Runs as ``python -m poly_epo_trl.rewards._math_worker``: the checks run in this process's main thread, where
math-verify's signal-based timeouts work, and nothing of the caller's program is re-imported.
"""

import json
import sys


def verify_pair(gold: str, prediction: str, timeout_seconds: int) -> bool:
    from math_verify import parse, verify

    gold_parsed = parse(f"${gold}$", parsing_timeout=timeout_seconds)
    predicted = parse(f"\\boxed{{{prediction}}}", parsing_timeout=timeout_seconds)
    if not gold_parsed or not predicted:
        return False
    return bool(verify(gold_parsed, predicted, timeout_seconds=timeout_seconds))


def main() -> None:
    import math_verify  # noqa: F401  (import before signalling readiness)

    sys.stdout.write("ready\n")
    sys.stdout.flush()
    for line in sys.stdin:
        gold, prediction, timeout_seconds = json.loads(line)
        try:
            ok = verify_pair(gold, prediction, timeout_seconds)
        except Exception:
            ok = False
        sys.stdout.write("1\n" if ok else "0\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
