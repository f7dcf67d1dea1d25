"""Binary code reward: the completion's code, run in the sandbox; 1 only when the trusted parent sees every test pass.

Tests come from the dataset's ``tests`` column (see ``assertions.plan_tests``) with ``entry_point`` where they are a
``check(candidate)`` function, and optional per-row ``setup_code`` (LeetCodeDataset's ``prompt``: imports, ``inf``,
``ListNode``/``TreeNode`` and their helpers) that runs before the solution, as the dataset's own evaluator does.

The sandbox evaluates only the calls and returns their values as plain data; expected values never enter it, and
the comparison happens here. Each rollout gets an outcome (``pass``, ``wrong_answer``, ``runtime_error``,
``syntax_error``, ``timeout``, ``memory``, ``output_limit``, ``no_code``, ``bad_test``, ``unverifiable_test``),
logged per step as ``code/<outcome>`` fractions.
"""

from __future__ import annotations

import json
import logging
import marshal
import os
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from ..text import message_text
from ._harness import decode
from .assertions import BadTests, CallPlan, StdioPlan, plan_tests
from .base import REWARDS, FromSettings
from .sandbox import DEFAULT_PACKAGES, Sandbox, SandboxLimits, SandboxResult

logger = logging.getLogger(__name__)
OUTCOMES = (
    "pass",
    "wrong_answer",
    "runtime_error",
    "syntax_error",
    "timeout",
    "memory",
    "output_limit",
    "no_code",
    "bad_test",
    "unverifiable_test",
)
TRUST_MODES = ("strict", "sandbox_asserts")
PYTHON_LANGUAGES = ("", "python", "python3", "py")


def code_blocks(text: str) -> list[tuple[str, str]]:
    """Every fenced block as (language, body), in order; a linear scan (no regex backtracking)."""
    blocks, start = [], 0
    while (open_at := text.find("```", start)) >= 0:
        line_end = text.find("\n", open_at + 3)
        if line_end < 0:
            break
        close_at = text.find("```", line_end + 1)
        if close_at < 0:
            break
        language = text[open_at + 3 : line_end].strip().lower()
        blocks.append((language, text[line_end + 1 : close_at]))
        start = close_at + 3
    return blocks


def extract_code(completion: str, entry_point: str | None = None) -> str | None:
    """The solution in a completion: the last Python (or unlabelled) block that defines the entry point's first name
    (``class Solution`` for ``Solution().twoSum``), else the last Python block; None when there is none."""
    blocks = [body for language, body in code_blocks(completion) if language in PYTHON_LANGUAGES and body.strip()]
    if not blocks:
        return None
    if entry_point:
        name = entry_point.split("(")[0].split(".")[0].strip()
        defining = [b for b in blocks if f"class {name}" in b or f"def {name}" in b]
        if defining:
            return defining[-1]
    return blocks[-1]


@dataclass(frozen=True)
class CodeVerdict:
    """One rollout's result: whether it passed, the outcome, and a short reason."""

    passed: bool
    outcome: str
    detail: str = ""

    @classmethod
    def fail(cls, outcome: str, detail: str = "") -> CodeVerdict:
        return cls(False, outcome, detail[:300])


class CodeReward:
    """TRL reward function: 1.0 when the completion's code passes all of its row's tests, else 0.0.

    ``trust_mode="strict"`` (default) scores a row whose assertions do not all reduce to call + expected value 0
    (outcome ``unverifiable_test``); ``"sandbox_asserts"`` runs such rows' tests inside the sandbox and takes the
    sandbox's word (forgeable: only for test suites you cannot rewrite), counted as ``code/sandbox_verdicts``.
    """

    __name__ = "code"

    def __init__(
        self,
        limits: SandboxLimits | None = None,
        isolation: str = "bwrap",
        trust_mode: str = "strict",
        max_workers: int | None = None,
        packages: Sequence[str] = DEFAULT_PACKAGES,
    ) -> None:
        if trust_mode not in TRUST_MODES:
            raise ValueError(f"code trust_mode={trust_mode!r}: use one of {TRUST_MODES}.")
        self.sandbox = Sandbox(limits, isolation, tuple(packages))
        self.trust_mode = trust_mode
        self.max_workers = max_workers or os.cpu_count() or 1
        self._reported: set[str] = set()

    def check(
        self, completion: Any, tests: Any, entry_point: str | None = None, setup_code: str | None = None
    ) -> CodeVerdict:
        """The verdict for one completion against one row's tests."""
        code = extract_code(message_text(completion), entry_point)
        if code is None:
            return CodeVerdict.fail("no_code", "no ```python block")
        try:
            plan = plan_tests(tests, entry_point)
        except BadTests as error:
            return CodeVerdict.fail("bad_test", str(error))
        source = f"{setup_code}\n{code}" if setup_code else code
        if isinstance(plan, StdioPlan):
            return self._stdio(source, plan)
        if plan.unverifiable and self.trust_mode == "strict":
            return CodeVerdict.fail(
                "unverifiable_test",
                f"{plan.unverifiable} does not reduce to a call and a constant (code_trust_mode: sandbox_asserts "
                "runs it inside the sandbox)",
            )
        return self._calls(source, plan)

    def _calls(self, source: str, plan: CallPlan) -> CodeVerdict:
        job = {**plan.job(), "source": source, "path": self.sandbox.python_path}
        in_sandbox = bool(plan.unverifiable)
        if in_sandbox:  # opted in: the whole test file runs in the sandbox, which reports pass or fail itself
            call = f"check({plan.entry_point})" if plan.entry_point else "pass"
            job.update(calls=[], entry_point=None, prelude="", asserts=[plan.source, call])
        result = self.sandbox.run(_frame(job))
        failure = _limits_failure(result)
        if failure:
            return failure
        try:
            report = json.loads(result.stdout)
            if report["error"]:
                return _error_verdict(report["error"], report["stage"])
            if in_sandbox:
                ok = report["asserts"] == [True, True]
                return CodeVerdict(True, "pass", "sandbox verdict") if ok else CodeVerdict.fail("wrong_answer")
            outputs = report["results"]
            if len(outputs) > len(plan.checks):
                raise ValueError("more results than calls")
            for check, output in zip(plan.checks, outputs, strict=False):
                if "e" in output:
                    return _error_verdict(str(output["e"]), "tests", check.expression)
                if not check.passes(decode(output["v"])):
                    return CodeVerdict.fail("wrong_answer", f"{check.expression} {check.op} expected")
            if len(outputs) < len(plan.checks):
                raise ValueError("fewer results than calls")
        except (ValueError, KeyError, TypeError, RecursionError) as error:
            if result.returncode != 0:
                return _exit_verdict(result)
            return CodeVerdict.fail("wrong_answer", f"unreadable report: {error}")
        return CodeVerdict(True, "pass")

    def _stdio(self, source: str, plan: StdioPlan) -> CodeVerdict:
        for stdin, expected in plan.cases:
            job = {"mode": "program", "source": source, "path": self.sandbox.python_path}
            result = self.sandbox.run(_frame(job, stdin.encode()))
            failure = _limits_failure(result)
            if failure:
                return failure
            if result.returncode != 0:
                return _exit_verdict(result)
            if not _same_output(result.stdout.decode(errors="replace"), expected):
                return CodeVerdict.fail("wrong_answer", "stdout differs")
        return CodeVerdict(True, "pass")

    def __call__(
        self,
        completions: Sequence[Any],
        tests: Sequence[Any],
        entry_point: Sequence[str | None] | None = None,
        setup_code: Sequence[str | None] | None = None,
        log_metric: Callable[[str, float], None] | None = None,
        log_extra: Callable[[str, list], None] | None = None,
        **kwargs: Any,
    ) -> list[float]:
        verdicts = self.check_batch(completions, tests, entry_point, setup_code)
        counts = Counter(v.outcome for v in verdicts)
        if log_metric is not None:
            for outcome in OUTCOMES:
                log_metric(f"code/{outcome}", counts[outcome] / max(len(verdicts), 1))
            if self.trust_mode == "sandbox_asserts":
                sandboxed = sum(v.detail == "sandbox verdict" for v in verdicts)
                log_metric("code/sandbox_verdicts", sandboxed / max(len(verdicts), 1))
        if log_extra is not None:
            log_extra("code_outcome", [v.outcome for v in verdicts])
        for verdict in verdicts:
            if verdict.outcome in ("bad_test", "unverifiable_test") and verdict.detail not in self._reported:
                self._reported.add(verdict.detail)
                logger.warning("code reward: a row scores 0 (%s): %s", verdict.outcome, verdict.detail)
        return [float(v.passed) for v in verdicts]

    def check_batch(
        self,
        completions: Sequence[Any],
        tests: Sequence[Any],
        entry_point: Sequence[str | None] | None = None,
        setup_code: Sequence[str | None] | None = None,
    ) -> list[CodeVerdict]:
        """Verdicts for a batch, ``max_workers`` sandboxes at a time."""
        if len(completions) != len(tests):
            raise ValueError(f"code reward got {len(completions)} completions and {len(tests)} test sets.")
        entry_points = list(entry_point) if entry_point is not None else [None] * len(completions)
        setups = list(setup_code) if setup_code is not None else [None] * len(completions)
        with ThreadPoolExecutor(max_workers=self.max_workers) as pool:
            return list(
                pool.map(lambda i: self.check(completions[i], tests[i], entry_points[i], setups[i]), range(len(tests)))
            )


def _frame(job: dict[str, Any], stdin: bytes = b"") -> bytes:
    data = marshal.dumps(job)
    return f"{len(data)}\n".encode() + data + stdin


def _limits_failure(result: SandboxResult) -> CodeVerdict | None:
    if result.memory_exceeded:
        return CodeVerdict.fail("memory", "over the memory limit")
    if result.timed_out:
        return CodeVerdict.fail("timeout", f"over {result.seconds:.1f} s")
    if result.output_exceeded:
        return CodeVerdict.fail("output_limit", "too much output")
    return None


def _exit_verdict(result: SandboxResult) -> CodeVerdict:
    """A program that ended without a readable report: CPU limit, killed, or an uncaught error."""
    code = result.returncode
    stderr = result.stderr.decode(errors="replace").strip()
    if code in (-24, -9) and "MemoryError" not in stderr:  # SIGXCPU, or SIGKILL after the hard CPU limit
        return CodeVerdict.fail("timeout", "over the CPU-time limit")
    last = stderr.splitlines()[-1] if stderr else f"exit code {code}"
    return _error_verdict(last, "solution")


def _error_verdict(error: str, stage: str, where: str = "") -> CodeVerdict:
    place = f" in {where}" if where else f" ({stage})"
    if error.startswith("NotPlainData"):
        return CodeVerdict.fail("wrong_answer", f"{error}{place}")
    if error.startswith("MemoryError"):
        return CodeVerdict.fail("memory", f"MemoryError{place}")
    if stage == "solution" and error.startswith(("SyntaxError", "IndentationError", "TabError")):
        return CodeVerdict.fail("syntax_error", error)
    return CodeVerdict.fail("runtime_error", f"{error}{place}")


def _same_output(actual: str, expected: str) -> bool:
    def lines(text: str) -> list[str]:
        return [line.rstrip() for line in text.strip().splitlines()]

    return lines(actual) == lines(expected)


_DEFAULT: list[CodeReward] = []


def code_reward(
    completions: Sequence[Any],
    tests: Sequence[Any],
    entry_point: Sequence[str | None] | None = None,
    setup_code: Sequence[str | None] | None = None,
    **kwargs: Any,
) -> list[float]:
    """The code reward with default settings (bubblewrap sandbox, strict trust), as a plain TRL reward function."""
    if not _DEFAULT:
        _DEFAULT.append(CodeReward())
    return _DEFAULT[0](completions, tests, entry_point, setup_code, **kwargs)


def _from_settings(settings: Any) -> Callable:
    """The recipe's code reward (``settings.CodeRewardSettings``), or the defaults' (``code_reward``)."""
    return settings.code_reward() if settings is not None else code_reward


REWARDS.register("code")(FromSettings(_from_settings))
