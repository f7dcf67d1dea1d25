"""Waiting out a judge service that gave no answer at all, past every group's retry budget, and saying so at most
once a minute (what ``pipeline.JudgePipeline`` uses, group by group)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import Callable

from .errors import JudgeOutage

logger = logging.getLogger(__name__)
Clock = Callable[[], float]


def duration(seconds: float) -> str:
    """``42 s``, ``3 min 5 s``, ``2 h 10 min``."""
    seconds = max(0, int(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60} min"


class RateLimitedWarning:
    """Calls ``emit(suppressed)`` at most once per ``seconds``; ``suppressed`` counts the calls skipped since."""

    def __init__(self, seconds: float, clock: Clock = time.monotonic) -> None:
        self.seconds = seconds
        self.clock = clock
        self.last: float | None = None
        self.suppressed = 0

    def __call__(self, emit: Callable[[int], None]) -> None:
        now = self.clock()
        if self.last is not None and now - self.last < self.seconds:
            self.suppressed += 1
            return
        emit(self.suppressed)
        self.last, self.suppressed = now, 0


OUTAGE_LOG_SECONDS = 60.0
OUTAGE_RETRY_PAUSE = 1.0  # between rounds of a group waiting out an outage (the breaker spaces the probes)


class OutageWait:
    """Waiting out a service that gave no answer at all, past every group's retry budget: ``since`` is when it
    stopped answering (``time.monotonic()``; None while it answers). ``wait`` logs a line a minute and pauses, so
    the group can ask again, until the service has been down ``max_seconds``; then ``JudgeOutage``."""

    def __init__(self) -> None:
        self.since: float | None = None
        self._began = ""  # the same moment on the clock, for the log
        self._warning = RateLimitedWarning(OUTAGE_LOG_SECONDS)

    def answered(self) -> None:
        """The service answered (with ids, a 4xx or an invalid answer): it is up."""
        self.since = None

    async def wait(self, error: Exception, max_seconds: float, where: str, stats: Counter) -> None:
        now = time.monotonic()
        if self.since is None:
            self.since = now
            self._began = time.strftime("%H:%M:%S %Z")
            stats["outages"] += 1
        down = now - self.since
        stats["outage_waits"] += 1
        if down >= max_seconds:
            raise JudgeOutage(
                f"{where} has not answered for {duration(down)}, longer than judge_max_outage_seconds="
                f"{max_seconds:g}. Last failure: {error}"
            ) from error
        self._warning(
            lambda suppressed: logger.warning(
                "%s is down: no answer for %s, since %s (last failure: %s). Training waits before this step's "
                "update and goes on when it answers; nothing falls back meanwhile. Start or fix the judge server (or "
                "its network); the run saves a checkpoint and stops after judge_max_outage_seconds=%g (%s left).",
                where,
                duration(down),
                self._began,
                error,
                max_seconds,
                duration(max_seconds - down),
            )
        )
        await asyncio.sleep(min(OUTAGE_RETRY_PAUSE, max_seconds - down))
