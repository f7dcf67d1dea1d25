"""Keeping a judge service usable, request by request (what language-model judges use): a retry time budget per
group, a circuit breaker with probes, and a concurrency limit that adapts to the server's queue (additive increase,
multiplicative decrease). Past the budget, the pipeline may wait out an outage (``outage.OutageWait``).

Only ``ServiceError`` (the service did not answer) is retried or counted by the breaker. A ``GroupError`` (an invalid
answer, a 4xx) proves the server is alive: the breaker records a success and the error goes back to the group.
All three pieces are plain state driven by ``time.monotonic``; what waits on them waits in the running event loop,
so they serve one batch (one event loop) at a time, across batches.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections import Counter, deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from .errors import CircuitOpen, GroupError, JudgeTimeout, ServiceError

T = TypeVar("T")
logger = logging.getLogger(__name__)
Clock = Callable[[], float]


@dataclass
class RetryPolicy:
    """How one group waits out a failing service.

    ``timeout``: seconds from sending a request to the end of its reply (time spent waiting for a local slot does
    not count). ``connect_timeout``: seconds to open a connection. ``budget``: seconds a group keeps retrying,
    counted from its first service failure (or from when it first found the breaker open); long enough to outlast a
    server restart. Between tries it waits uniform(0, min(max_delay, base_delay * 2^k)) (full jitter), or the
    server's retry-after capped at ``max_retry_after``."""

    timeout: float = 120.0
    connect_timeout: float = 5.0
    budget: float = 120.0
    base_delay: float = 0.5
    max_delay: float = 10.0
    max_retry_after: float = 30.0

    def __post_init__(self) -> None:
        if self.timeout <= 0 or self.connect_timeout <= 0:
            raise ValueError(f"RetryPolicy needs positive timeouts, got {self.timeout} and {self.connect_timeout}.")
        if self.budget < 0 or self.base_delay < 0 or self.max_delay < 0 or self.max_retry_after < 0:
            raise ValueError("RetryPolicy needs non-negative budget, base_delay, max_delay and max_retry_after.")

    def delay(self, attempt: int, retry_after: float | None, rng: random.Random) -> float:
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_retry_after)
        return rng.uniform(0, min(self.max_delay, self.base_delay * 2**attempt))


class _Wakeup:
    """An asyncio.Event for whichever event loop is running now (each batch may run in a fresh loop)."""

    def __init__(self) -> None:
        self._event: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def event(self) -> asyncio.Event:
        loop = asyncio.get_running_loop()
        if self._event is None or self._loop is not loop:
            self._event, self._loop = asyncio.Event(), loop
        return self._event

    def notify(self) -> None:
        if self._event is not None:
            self._event.set()
            self._event = None

    async def wait(self, timeout: float) -> None:
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self.event().wait(), max(timeout, 0.0))


@dataclass(frozen=True)
class Ticket:
    """Admission to send one request: the breaker epoch it was sent in, and whether it is the breaker's probe."""

    epoch: int
    probe: bool = False


class CircuitBreaker:
    """Closed: requests go out; ``failure_threshold`` consecutive service failures open it. Open: nothing goes out
    but one probe, first ``first_probe`` seconds after opening, then every min(2^k * first_probe, ``probe_interval``)
    seconds; everyone else waits for the probe's verdict. Any answer from the server (a success, an invalid answer,
    a 4xx) closes it. A failure changes nothing when the server answered another request after this one was sent
    (it is alive, just busy: the concurrency limit handles that) or when it was sent before the breaker opened."""

    def __init__(
        self,
        failure_threshold: int = 5,
        first_probe: float = 1.0,
        probe_interval: float = 5.0,
        clock: Clock = time.monotonic,
    ) -> None:
        if failure_threshold < 1 or first_probe < 0 or probe_interval < 0:
            raise ValueError("CircuitBreaker needs failure_threshold >= 1 and non-negative probe times.")
        self.failure_threshold = failure_threshold
        self.first_probe = first_probe
        self.probe_interval = probe_interval
        self.clock = clock
        self.failures = 0
        self.epoch = 0
        self.opened_at: float | None = None
        self.next_probe_at = 0.0
        self.probes_failed = 0
        self.probe_in_flight = False
        self.times_opened = 0
        self.last_answer_at = float("-inf")
        self.last_failure = ""
        self._wakeup = _Wakeup()
        self._opened = _Wakeup()

    @property
    def state(self) -> str:
        return "closed" if self.opened_at is None else "open"

    def try_admit(self) -> Ticket | None:
        """A ticket when a request may go out now, else None (the breaker is open and it is not probe time)."""
        if self.opened_at is None:
            return Ticket(self.epoch)
        if not self.probe_in_flight and self.clock() >= self.next_probe_at:
            self.probe_in_flight = True
            return Ticket(self.epoch, probe=True)
        return None

    async def admit(self, deadline: Callable[[], float]) -> Ticket:
        """Wait until a request may go out; CircuitOpen once ``deadline()`` (a clock time) has passed."""
        while (ticket := self.try_admit()) is None:
            now = self.clock()
            if now >= deadline():
                raise CircuitOpen(
                    f"the service is down (breaker open for {now - self.opened_at:.0f}s; last failure: "
                    f"{self.last_failure})"
                )
            until = self.next_probe_at - now if not self.probe_in_flight else 1.0
            await self._wakeup.wait(min(until, deadline() - now, 1.0))
        return ticket

    def record(self, ticket: Ticket, answered: bool, sent_at: float = float("inf"), failure: str = "") -> None:
        """The outcome of an admitted request sent at ``sent_at``: ``answered`` when the server replied at all,
        else ``failure`` says what happened."""
        if failure:
            self.last_failure = failure
        if ticket.probe:
            self.probe_in_flight = False
        if answered:
            self.failures, self.opened_at, self.probes_failed = 0, None, 0
            self.last_answer_at = self.clock()
            self._wakeup.notify()
            return
        if (ticket.epoch != self.epoch or self.last_answer_at > sent_at) and not ticket.probe:
            return  # sent before the breaker opened, or the server answered since: not evidence it is down
        if self.opened_at is None:
            self.failures += 1
            if self.failures >= self.failure_threshold:
                self.epoch += 1
                self.times_opened += 1
                self.opened_at = self.clock()
                self.next_probe_at = self.opened_at + self.first_probe
                self._opened.notify()
        elif ticket.probe:
            self.probes_failed += 1
            wait = min(self.first_probe * 2**self.probes_failed, self.probe_interval)
            self.next_probe_at = self.clock() + wait
        self._wakeup.notify()

    async def back_off(self, delay: float) -> None:
        """Sleep ``delay`` seconds, or until the breaker opens if sooner: from then on its probes pace the retries,
        and its verdict wakes every waiting group at once."""
        if self.opened_at is None:
            await self._opened.wait(delay)

    def release_unused(self, ticket: Ticket) -> None:
        """A ticket whose request was never sent (cancelled): a probe slot goes back."""
        if ticket.probe:
            self.probe_in_flight = False
            self._wakeup.notify()


class AdaptiveConcurrency:
    """How many requests may be in flight: starts at ``initial``, grows by about one per round trip while the server
    keeps up (+1/limit per success), halves on an overload signal (a timeout, 429, 503), at most once per round
    trip (only requests sent after the last decrease can cause another), and stays within [1, ``maximum``]."""

    def __init__(self, maximum: int, initial: int = 8, clock: Clock = time.monotonic) -> None:
        if maximum < 1 or initial < 1:
            raise ValueError(f"concurrency limits must be at least 1, got maximum={maximum}, initial={initial}.")
        self.maximum = maximum
        self.limit = float(min(initial, maximum))
        self.in_flight = 0
        self.clock = clock
        self.last_decrease = float("-inf")
        self._waiters: deque[asyncio.Future] = deque()

    async def acquire(self) -> None:
        """Wait for a slot (hand it back with ``release``)."""
        while self.in_flight >= int(self.limit):
            future = asyncio.get_running_loop().create_future()
            self._waiters.append(future)
            try:
                await future
            except asyncio.CancelledError:
                if future in self._waiters:
                    self._waiters.remove(future)
                raise
        self.in_flight += 1

    def release(self, sent_at: float, overload: bool | None) -> None:
        """``overload``: True for an overload signal, False for an answer, None for neither (e.g. refused)."""
        self.in_flight -= 1
        if overload and sent_at > self.last_decrease:
            self.limit = max(1.0, self.limit / 2)
            self.last_decrease = self.clock()
        elif overload is False:
            self.limit = min(float(self.maximum), self.limit + 1 / self.limit)
        free = int(self.limit) - self.in_flight
        while free > 0 and self._waiters:
            future = self._waiters.popleft()
            if not future.done():
                future.set_result(None)
                free -= 1


async def call_with_retries(
    call: Callable[[], Awaitable[T]],
    policy: RetryPolicy,
    breaker: CircuitBreaker | None,
    limiter: AdaptiveConcurrency | None,
    stats: Counter,
    rng: random.Random,
    latencies: list[float] | None = None,
) -> T:
    """``await call()`` until it answers, a GroupError comes back (re-raised), or the group's budget is spent
    (the last ServiceError, or CircuitOpen, is raised). After a service failure the group backs off (full jitter,
    or the server's retry-after) while the breaker is closed; once it opens, the group waits for the breaker
    instead, so a server that comes back is found by the next probe and every waiting group goes at once. Counts
    calls, retries (requests actually re-sent) and each failure kind in ``stats``; appends each answered request's
    seconds to ``latencies``."""
    attempt = 0
    budget_start: float | None = None
    clock = breaker.clock if breaker is not None else time.monotonic

    def deadline() -> float:
        return (budget_start if budget_start is not None else clock()) + policy.budget

    while True:
        ticket = None
        if breaker is not None and (ticket := breaker.try_admit()) is None:
            stats["breaker_waits"] += 1
            budget_start = clock() if budget_start is None else budget_start
            try:
                ticket = await breaker.admit(deadline)
            except CircuitOpen:
                stats["circuit_open"] += 1
                raise
        if limiter is not None:
            try:
                await limiter.acquire()
            except BaseException:
                if breaker is not None and ticket is not None:
                    breaker.release_unused(ticket)
                raise
            if breaker is not None and ticket is not None and not ticket.probe and ticket.epoch != breaker.epoch:
                limiter.release(clock(), None)  # the breaker opened while this waited for a slot: ask it again
                continue
        sent_at = clock()
        stats["calls"] += 1
        stats["retries"] += attempt > 0
        stats["probes"] += bool(ticket and ticket.probe)
        try:
            try:
                result = await asyncio.wait_for(call(), policy.timeout)
            except asyncio.TimeoutError as error:
                raise JudgeTimeout(f"no reply within {policy.timeout:g}s (judge_timeout)") from error
        except GroupError as error:
            _settle(breaker, ticket, limiter, sent_at, answered=True)
            stats[error.kind] += 1
            raise
        except ServiceError as error:
            _settle(breaker, ticket, limiter, sent_at, answered=False, overload=error.overload, failure=str(error))
            stats[error.kind] += 1
            budget_start = clock() if budget_start is None else budget_start
            attempt += 1
            if breaker is not None and breaker.state == "open" and error.retry_after is None:
                continue  # the breaker's probes pace the retries now, and its verdict wakes this group at once
            delay = policy.delay(attempt - 1, error.retry_after, rng)
            if clock() + delay > deadline():
                raise
            if breaker is None or error.retry_after is not None:  # the server said how long: it is kept
                await asyncio.sleep(delay)
            else:
                await breaker.back_off(delay)
            continue
        except BaseException:  # cancelled, or a bug in the backend: neither is evidence about the service
            if limiter is not None:
                limiter.release(sent_at, None)
            if breaker is not None and ticket is not None:
                breaker.release_unused(ticket)
            raise
        _settle(breaker, ticket, limiter, sent_at, answered=True)
        if latencies is not None:
            latencies.append(clock() - sent_at)
        return result


def _settle(
    breaker: CircuitBreaker | None,
    ticket: Ticket | None,
    limiter: AdaptiveConcurrency | None,
    sent_at: float,
    answered: bool,
    overload: bool = False,
    failure: str = "",
) -> None:
    if limiter is not None:
        limiter.release(sent_at, overload if not answered else False)
    if breaker is not None and ticket is not None:
        breaker.record(ticket, answered, sent_at, failure)
