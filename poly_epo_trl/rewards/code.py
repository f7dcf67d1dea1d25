"""Binary code reward: the completion's last Python block, run in the sandbox, scores 1 only if every test passes.

Test formats (the dataset's ``tests`` column, optionally with ``entry_point``):

- function tests (LeetCode / MBPP / HumanEval style): a list of Python statements, usually asserts, or one string of
  test code; with ``entry_point`` (e.g. ``"Solution().twoSum"``) the statement ``check(<entry_point>)`` is added.
  They run after the solution, in its namespace, under the harness in ``_harness.py``.
- stdin/stdout tests (LiveCodeBench / APPS style): ``{"inputs": [...], "outputs": [...]}`` (or that as JSON). Each
  case runs the program on its own, and its stdout must equal the expected output up to trailing whitespace.
"""

from __future__ import annotations

import json
import os
import re
import secrets
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from ..text import message_text
from .sandbox import SandboxLimits, SandboxResult, run_python

HARNESS = Path(__file__).with_name("_harness.py").read_text()
_FENCE = re.compile(r"```[ \t]*(?:python3?|py)?[ \t]*\n(.*?)```", re.DOTALL | re.IGNORECASE)


def extract_code(completion: str) -> str | None:
    """The last fenced code block (```python, ```py or bare ```), or None when there is none."""
    blocks = _FENCE.findall(completion)
    return blocks[-1] if blocks and blocks[-1].strip() else None


def parse_tests(tests: Any, entry_point: str | None = None) -> tuple[str, list]:
    """("function", statements) or ("stdio", [(input, output), ...]) from a dataset row's tests."""
    if isinstance(tests, str):
        stripped = tests.strip()
        tests = json.loads(stripped) if stripped.startswith("{") else [tests]
    if isinstance(tests, dict):
        inputs, outputs = tests.get("inputs"), tests.get("outputs")
        if not isinstance(inputs, list) or not isinstance(outputs, list) or len(inputs) != len(outputs) or not inputs:
            raise ValueError("stdin/stdout tests need equally long, non-empty 'inputs' and 'outputs' lists.")
        return "stdio", [(str(i), str(o)) for i, o in zip(inputs, outputs, strict=True)]
    if isinstance(tests, Sequence) and tests and all(isinstance(t, str) for t in tests):
        statements = list(tests)
        if entry_point:
            statements.append(f"check({entry_point})")
        return "function", statements
    raise ValueError(
        f"Cannot read tests of type {type(tests).__name__}: use a list of assert statements, a string of test code, "
        "or {'inputs': [...], 'outputs': [...]}."
    )


def _same_output(actual: str, expected: str) -> bool:
    def lines(text: str) -> list[str]:
        return [line.rstrip() for line in text.strip().splitlines()]

    return lines(actual) == lines(expected)


def run_function_tests(code: str, statements: list[str], limits: SandboxLimits) -> tuple[bool, SandboxResult]:
    nonce = secrets.token_hex(16)
    files = {"harness.py": HARNESS, "solution.py": code, "tests.json": json.dumps({"tests": statements})}
    result = run_python(files, ["harness.py"], stdin=nonce + "\n", limits=limits)
    verdict = f"{nonce} {len(statements)} {len(statements)}"
    passed = result.ok and any(line.strip() == verdict for line in result.stdout.splitlines())
    return passed, result


def run_stdio_tests(code: str, cases: list[tuple[str, str]], limits: SandboxLimits) -> tuple[bool, SandboxResult]:
    result = None
    for stdin, expected in cases:
        result = run_python({"main.py": code}, ["main.py"], stdin=stdin, limits=limits)
        if not result.ok or not _same_output(result.stdout, expected):
            return False, result
    return True, result


def check_code(completion: Any, tests: Any, entry_point: str | None = None, limits: SandboxLimits | None = None):
    """(passed, last sandbox result or None) for one completion against one row's tests."""
    code = extract_code(message_text(completion))
    if code is None:
        return False, None
    kind, parsed = parse_tests(tests, entry_point)
    limits = limits or SandboxLimits()
    if kind == "function":
        return run_function_tests(code, parsed, limits)
    return run_stdio_tests(code, parsed, limits)


def code_reward(
    completions: Sequence[Any],
    tests: Sequence[Any],
    entry_point: Sequence[str | None] | None = None,
    limits: SandboxLimits | None = None,
    max_workers: int | None = None,
    **kwargs: Any,
) -> list[float]:
    """TRL reward: 1.0 when the completion's last code block passes all of its row's tests in the sandbox, else 0.0.

    The batch runs concurrently (``max_workers`` sandboxes at once, default: the CPU count)."""
    if len(completions) != len(tests):
        raise ValueError(f"code_reward got {len(completions)} completions and {len(tests)} test sets.")
    entry_points = list(entry_point) if entry_point is not None else [None] * len(completions)
    workers = max_workers or os.cpu_count() or 1

    def one(i: int) -> float:
        passed, _ = check_code(completions[i], tests[i], entry_points[i], limits)
        return float(passed)

    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(one, range(len(completions))))
