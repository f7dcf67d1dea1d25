"""LeetCodeDataset's own evaluator, as a reference to measure the code reward against (trusted programs only).

The dataset (newfacade/LeetCodeDataset) runs ``prompt + code + test + check(entry_point)`` as one program in a
fresh process and calls it correct when it exits without an exception; its ``extract_completion`` takes the
longest ```python block of a response. These are the dataset's programs, not a sandbox: use them on the dataset's
canonical solutions and recorded responses, never on a policy's rollouts.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from .code import CodeReward, code_blocks
from .sandbox import HASH_SEED


def evaluator_extract(response: str) -> str | None:
    """The dataset's extraction: the longest ```python block."""
    blocks = [body for language, body in code_blocks(response) if language == "python"]
    return max(blocks, key=len) if blocks else None


def evaluator_program(row: dict[str, Any], code: str) -> str:
    return f"{row['prompt']}\n{code}\n{row['test']}\ncheck({row['entry_point']})\n"


def evaluator_verdict(row: dict[str, Any], code: str | None, timeout: float = 10.0) -> tuple[bool, str]:
    """(passed, reason) from the dataset's evaluator: the program in a plain ``python`` subprocess."""
    if code is None:
        return False, "no code block"
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as handle:
        handle.write(evaluator_program(row, code))
    try:
        result = subprocess.run(
            [sys.executable, handle.name],
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
            env={**os.environ, HASH_SEED[0]: HASH_SEED[1]},  # the reward's seed, so that flaky programs compare
        )
    except subprocess.TimeoutExpired:
        return False, "timeout"
    finally:
        os.unlink(handle.name)
    if result.returncode == 0:
        return True, "pass"
    lines = result.stderr.strip().splitlines()
    return False, lines[-1][:200] if lines else f"exit code {result.returncode}"


def load_rows(path: Path, limit: int | None = None, stride: int = 1) -> list[dict]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as handle:
        rows = [json.loads(line) for line in handle]
    rows = rows[::stride]
    return rows[:limit] if limit else rows


def fenced(code: str) -> str:
    return f"```python\n{code}\n```"


def _row_args(row: dict) -> tuple:
    return row["test"], row["entry_point"], row["prompt"]


def compare(rows: list[dict], reward: CodeReward, workers: int) -> dict:
    """Verdicts of both evaluators on each row's canonical solution and response, with timings."""
    jobs = []
    for row in rows:
        code = evaluator_extract(row["response"])
        jobs.append(("completion", row, row["completion"], fenced(row["completion"])))
        jobs.append(("response", row, code, fenced(code) if code is not None else row["response"]))
    own = [("response_own_extraction", job[1], job[2], job[1]["response"]) for job in jobs if job[0] == "response"]
    with ThreadPoolExecutor(workers) as pool:
        start = time.perf_counter()
        reference = list(pool.map(lambda job: evaluator_verdict(job[1], job[2]), jobs))
        reference_seconds = time.perf_counter() - start
        start = time.perf_counter()
        ours = list(pool.map(lambda job: reward.check(job[3], *_row_args(job[1])), jobs))
        our_seconds = time.perf_counter() - start
        ours += list(pool.map(lambda job: reward.check(job[3], *_row_args(job[1])), own))
    reference += [r for job, r in zip(jobs, reference, strict=True) if job[0] == "response"]
    jobs += own
    report: dict = {
        "programs": len(reference) - len(own),
        "reference_seconds": reference_seconds,
        "our_seconds": our_seconds,
    }
    for source in ("completion", "response", "response_own_extraction"):
        stats = Counter()
        disagreements = []
        for job, (ref_pass, ref_reason), verdict in zip(jobs, reference, ours, strict=True):
            if job[0] != source:
                continue
            stats["rows"] += 1
            stats["reference_pass"] += ref_pass
            stats["our_pass"] += verdict.passed
            if ref_pass == verdict.passed:
                stats["agree"] += 1
                continue
            kind = "false_negative" if ref_pass else "false_positive"
            stats[kind] += 1
            disagreements.append(
                {
                    "task_id": job[1]["task_id"],
                    "kind": kind,
                    "reference": ref_reason,
                    "ours": f"{verdict.outcome}: {verdict.detail}",
                }
            )
        report[source] = {**stats, "disagreements": disagreements}
    return report
