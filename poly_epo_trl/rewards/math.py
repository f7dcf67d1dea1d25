"""Binary math reward: the last \\boxed{...} against the dataset's answer, string match first, then math-verify.

math-verify bounds its parsing and comparison time with ``signal.alarm``, which works only in a main thread, while
TRL may call a reward from another thread or an event loop. So equivalence checks run in worker processes (in their
main thread, signal timeouts on) and the caller also waits with a wall-clock deadline: a check that hangs even there
(sympy stuck in C code) has its workers killed and scores 0. Any caller thread gets a correct, bounded answer.
"""

from __future__ import annotations

import multiprocessing
import threading
from collections.abc import Sequence
from typing import Any

from ..text import last_boxed, message_text, normalize_answer


def _verify_pair(gold: str, prediction: str, timeout_seconds: int) -> bool:
    """In a worker process: does math-verify find ``prediction`` equivalent to ``gold``?"""
    from math_verify import parse, verify

    gold_parsed = parse(f"${gold}$", parsing_timeout=timeout_seconds)
    predicted = parse(f"\\boxed{{{prediction}}}", parsing_timeout=timeout_seconds)
    if not gold_parsed or not predicted:
        return False
    return bool(verify(gold_parsed, predicted, timeout_seconds=timeout_seconds))


class MathVerifier:
    """Equivalence checks in a small pool of worker processes, each bounded by ``timeout_seconds``.

    Thread-safe. A check that misses the wall-clock deadline (``2 * timeout_seconds + 5`` s) counts as not
    equivalent and the pool is replaced, so one pathological answer never stalls training.
    """

    def __init__(self, num_workers: int = 2, timeout_seconds: int = 3) -> None:
        if num_workers < 1 or timeout_seconds < 1:
            raise ValueError("MathVerifier needs num_workers >= 1 and timeout_seconds >= 1.")
        self.num_workers = num_workers
        self.timeout_seconds = timeout_seconds
        self.deadline_seconds = 2 * timeout_seconds + 5
        self.timeouts = 0
        self._pool: Any = None
        self._lock = threading.Lock()

    def _get_pool(self) -> Any:
        with self._lock:
            if self._pool is None:
                context = multiprocessing.get_context("spawn")  # never fork a process that holds CUDA or threads
                self._pool = context.Pool(self.num_workers)
                # Start-up (imports) is not checking time: wait for every worker once, without the deadline.
                self._pool.starmap(_verify_pair, [("1", "1", self.timeout_seconds)] * self.num_workers)
            return self._pool

    def _restart(self, pool: Any) -> None:
        with self._lock:
            if self._pool is pool:
                self._pool = None
        pool.terminate()

    def equivalent(self, pairs: Sequence[tuple[str, str]]) -> list[bool]:
        """For each (gold, prediction), whether math-verify finds them equivalent within the time limits."""
        if not pairs:
            return []
        pool = self._get_pool()
        pending = [pool.apply_async(_verify_pair, (g, p, self.timeout_seconds)) for g, p in pairs]
        results: list[bool] = []
        for job in pending:
            try:
                results.append(bool(job.get(timeout=self.deadline_seconds)))
            except multiprocessing.TimeoutError:
                # The worker is stuck: kill the pool, score this pair 0 and check the rest on a fresh pool.
                self.timeouts += 1
                self._restart(pool)
                return [*results, False, *self.equivalent(pairs[len(results) + 1 :])]
            except Exception:
                results.append(False)
        return results

    def close(self) -> None:
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.terminate()


_VERIFIER: MathVerifier | None = None


def default_verifier() -> MathVerifier:
    global _VERIFIER
    if _VERIFIER is None:
        _VERIFIER = MathVerifier()
    return _VERIFIER


def math_reward(
    completions: Sequence[Any], answer: Sequence[Any], verifier: MathVerifier | None = None, **kwargs: Any
) -> list[float]:
    """TRL reward: 1.0 when the completion's last \\boxed{} equals the ``answer`` column (normalised text, else
    math-verify equivalence), 0.0 otherwise; no boxed answer scores 0."""
    if len(completions) != len(answer):
        raise ValueError(f"math_reward got {len(completions)} completions and {len(answer)} answers.")
    rewards = [0.0] * len(completions)
    to_verify: list[int] = []
    pairs: list[tuple[str, str]] = []
    for i, (completion, gold) in enumerate(zip(completions, answer, strict=True)):
        boxed = last_boxed(message_text(completion))
        if boxed is None or not boxed.strip() or gold is None:
            continue
        gold_text = str(gold).strip()
        if gold_text.startswith("\\boxed"):
            gold_text = last_boxed(gold_text) or gold_text
        if normalize_answer(boxed) == normalize_answer(gold_text):
            rewards[i] = 1.0
        else:
            to_verify.append(i)
            pairs.append((gold_text, boxed))
    for i, ok in zip(to_verify, (verifier or default_verifier()).equivalent(pairs), strict=True):
        rewards[i] = float(ok)
    return rewards
