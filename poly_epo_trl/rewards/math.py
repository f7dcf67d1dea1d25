"""Binary math reward: the last \\boxed{...} against the dataset's answer, string match first, then math-verify.

math-verify bounds its parsing and comparison time with ``signal.alarm``, which works only in a main thread, while
TRL may call a reward from another thread or an event loop. So equivalence checks run in worker processes (in their
main thread, signal timeouts on) and the caller also waits with a wall-clock deadline: a check that hangs even there
(sympy stuck in C code) has its worker killed and scores 0. Any caller thread gets a correct, bounded answer.
"""

from __future__ import annotations

import json
import os
import queue
import select
import subprocess
import sys
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ..text import differ_only_in_case, last_boxed, message_text, normalize_answer
from .base import REWARDS


class _Worker:
    """One ``_math_worker`` process; ``check`` returns None when it missed the deadline (the worker is then dead)."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "poly_epo_trl.rewards._math_worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env={**os.environ, "PYTHONWARNINGS": "ignore"},
        )
        if self.process.stdout.readline().strip() != "ready":  # start-up is not checking time: no deadline
            raise RuntimeError("the math-verify worker did not start; is math-verify installed?")

    def check(self, gold: str, prediction: str, timeout_seconds: int, deadline: float) -> bool | None:
        try:
            self.process.stdin.write(json.dumps([gold, prediction, timeout_seconds]) + "\n")
            self.process.stdin.flush()
        except OSError:
            return None
        ready, _, _ = select.select([self.process.stdout], [], [], deadline)
        line = self.process.stdout.readline() if ready else ""
        if line.strip() not in ("0", "1"):
            self.close()
            return None
        return line.strip() == "1"

    def close(self) -> None:
        self.process.kill()
        self.process.wait()


class MathVerifier:
    """Equivalence checks in worker processes, each bounded by ``timeout_seconds``; thread-safe.

    A check that misses the wall-clock deadline (``2 * timeout_seconds + 5`` s) counts as not equivalent and its
    worker is replaced, so one pathological answer never stalls training.
    """

    def __init__(self, num_workers: int = 2, timeout_seconds: int = 3) -> None:
        if num_workers < 1 or timeout_seconds < 1:
            raise ValueError("MathVerifier needs num_workers >= 1 and timeout_seconds >= 1.")
        self.num_workers = num_workers
        self.timeout_seconds = timeout_seconds
        self.deadline_seconds = 2 * timeout_seconds + 5
        self.timeouts = 0
        self._idle: queue.Queue[_Worker | None] = queue.Queue()
        for _ in range(num_workers):
            self._idle.put(None)  # started on first use

    def _check(self, pair: tuple[str, str]) -> bool:
        worker = self._idle.get()
        try:
            worker = worker or _Worker()
            result = worker.check(*pair, self.timeout_seconds, self.deadline_seconds)
            if result is None:
                self.timeouts += 1
                worker = None
            return bool(result)
        finally:
            self._idle.put(worker)

    def equivalent(self, pairs: Sequence[tuple[str, str]]) -> list[bool]:
        """For each (gold, prediction), whether math-verify finds them equivalent within the time limits."""
        if not pairs:
            return []
        with ThreadPoolExecutor(max_workers=min(self.num_workers, len(pairs))) as pool:
            return list(pool.map(self._check, pairs))

    def close(self) -> None:
        for _ in range(self.num_workers):
            worker = self._idle.get()
            if worker is not None:
                worker.close()
        for _ in range(self.num_workers):
            self._idle.put(None)


_VERIFIER: MathVerifier | None = None


def default_verifier() -> MathVerifier:
    global _VERIFIER
    if _VERIFIER is None:
        _VERIFIER = MathVerifier()
    return _VERIFIER


@REWARDS.register("math")
def math_reward(
    completions: Sequence[Any], answer: Sequence[Any], verifier: MathVerifier | None = None, **kwargs: Any
) -> list[float | None]:
    """TRL reward: 1.0 when the completion's last \\boxed{} equals the ``answer`` column (normalised text, else
    math-verify equivalence, case-sensitive: ``\\Pi`` is not ``\\pi``), 0.0 otherwise; no boxed answer scores 0.
    A row without a reference answer (None or blank) is not scored: None, which TRL and the trainers skip."""
    if len(completions) != len(answer):
        raise ValueError(f"math_reward got {len(completions)} completions and {len(answer)} answers.")
    rewards: list[float | None] = [0.0] * len(completions)
    to_verify: list[int] = []
    pairs: list[tuple[str, str]] = []
    for i, (completion, gold) in enumerate(zip(completions, answer, strict=True)):
        if gold is None or not str(gold).strip():
            rewards[i] = None
            continue
        boxed = last_boxed(message_text(completion))
        if boxed is None or not boxed.strip():
            continue
        gold_text = str(gold).strip()
        if gold_text.startswith("\\boxed"):
            gold_text = last_boxed(gold_text) or gold_text
        if normalize_answer(boxed) == normalize_answer(gold_text):
            rewards[i] = 1.0
        else:
            to_verify.append(i)
            pairs.append((gold_text, boxed))
    verdicts = (verifier or default_verifier()).equivalent(pairs)
    for i, (gold_text, boxed), ok in zip(to_verify, pairs, verdicts, strict=True):
        rewards[i] = float(ok and not differ_only_in_case(gold_text, boxed))
    return rewards
