"""Retries with backoff and jitter, and a circuit breaker, for judges that call a service."""

from __future__ import annotations

import asyncio
import random
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from .errors import CircuitOpen, FatalJudgeError, JudgeError, JudgeTimeout, RetryableError

T = TypeVar("T")


@dataclass
class RetryPolicy:
    """Per-call timeout, then up to ``max_retries`` more tries, waiting min(max_delay, base_delay * 2^k) with
    full jitter, or the server's retry-after when it gives one (capped at ``max_retry_after``)."""

    timeout: float = 60.0
    max_retries: int = 4
    base_delay: float = 1.0
    max_delay: float = 30.0
    max_retry_after: float = 60.0

    def __post_init__(self) -> None:
        if self.timeout <= 0 or self.max_retries < 0 or self.base_delay < 0 or self.max_delay < 0:
            raise ValueError("RetryPolicy needs timeout > 0 and non-negative max_retries, base_delay, max_delay.")

    def delay(self, attempt: int, retry_after: float | None, rng: random.Random) -> float:
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_retry_after)
        return rng.uniform(0, min(self.max_delay, self.base_delay * 2**attempt))


class CircuitBreaker:
    """Opens after ``failure_threshold`` consecutive failed calls; while open, calls fail at once. After
    ``reset_seconds`` one trial call goes through (half-open): success closes it, failure opens it again."""

    def __init__(
        self, failure_threshold: int = 5, reset_seconds: float = 30.0, clock: Callable[[], float] = time.monotonic
    ):
        if failure_threshold < 1 or reset_seconds < 0:
            raise ValueError("CircuitBreaker needs failure_threshold >= 1 and reset_seconds >= 0.")
        self.failure_threshold = failure_threshold
        self.reset_seconds = reset_seconds
        self.clock = clock
        self.failures = 0
        self.opened_at: float | None = None
        self.trial_in_flight = False
        self.times_opened = 0

    @property
    def state(self) -> str:
        if self.opened_at is None:
            return "closed"
        return "half_open" if self.clock() - self.opened_at >= self.reset_seconds else "open"

    def before_call(self) -> None:
        state = self.state
        if state == "open" or (state == "half_open" and self.trial_in_flight):
            raise CircuitOpen(f"circuit open after {self.failures} consecutive failures")
        if state == "half_open":
            self.trial_in_flight = True

    def record(self, success: bool) -> None:
        self.trial_in_flight = False
        if success:
            self.failures, self.opened_at = 0, None
            return
        self.failures += 1
        if self.failures >= self.failure_threshold or self.opened_at is not None:
            if self.state != "open":
                self.times_opened += 1
            self.opened_at = self.clock()


async def call_with_retries(
    call: Callable[[], Awaitable[T]],
    policy: RetryPolicy,
    breaker: CircuitBreaker | None,
    stats: Counter,
    rng: random.Random,
) -> T:
    """``await call()`` under the policy; counts calls, retries and each failure kind in ``stats``."""
    attempt = 0
    while True:
        if breaker is not None:
            try:
                breaker.before_call()
            except CircuitOpen:
                stats["circuit_open"] += 1
                raise
        stats["calls"] += 1
        try:
            try:
                result = await asyncio.wait_for(call(), policy.timeout)
            except asyncio.TimeoutError as error:
                raise JudgeTimeout(f"no reply within {policy.timeout:g}s") from error
        except RetryableError as error:
            stats[error.kind] += 1
            if breaker is not None:
                breaker.record(success=False)
            if attempt >= policy.max_retries:
                raise JudgeError(f"gave up after {attempt + 1} tries: {error}") from error
            await asyncio.sleep(policy.delay(attempt, error.retry_after, rng))
            attempt += 1
            stats["retries"] += 1
            continue
        except FatalJudgeError:
            stats["fatal_errors"] += 1
            if breaker is not None:
                breaker.record(success=False)
            raise
        if breaker is not None:
            breaker.record(success=True)
        return result
