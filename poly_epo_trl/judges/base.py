"""The clustering-judge interface: a prompt and its N completions in, N strategy ids out (100 = degenerate)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
from trl.trainer.utils import is_async_callable

from ..constants import DEGENERATE_CLUSTER_ID
from ..text import TOOL_RESULT_CHARS, trajectory_text
from .errors import CircuitOpen, JudgeError, JudgeOutage, ServiceError

T = TypeVar("T")
logger = logging.getLogger(__name__)
Group = tuple[str, Sequence[Any]]  # (problem, completions: strings, or lists of chat messages for agents)
JudgeFn = Callable[[str, list[str]], list[int]]


def normalize_labels(labels: Sequence[int], degenerate_cluster_id: int = DEGENERATE_CLUSTER_ID) -> list[int]:
    """Renumber ids densely in order of first appearance (0, 1, 2, ...), keeping the degenerate id; a real cluster
    is never numbered as the degenerate id (with more clusters than it, the numbering steps over it)."""
    mapping: dict[int, int] = {}
    out = []
    for label in labels:
        if label == degenerate_cluster_id:
            out.append(degenerate_cluster_id)
            continue
        if label not in mapping:
            new = len(mapping)
            mapping[label] = new + (0 <= degenerate_cluster_id <= new)
        out.append(mapping[label])
    return out


class JudgeLoop:
    """One long-lived event loop in a daemon thread, where every judge's I/O runs: HTTP clients and their
    keep-alive connections live as long as the process, and the trainer's main thread only submits and joins."""

    _lock = threading.Lock()
    _loop: asyncio.AbstractEventLoop | None = None
    _thread: threading.Thread | None = None

    @classmethod
    def get(cls) -> asyncio.AbstractEventLoop:
        with cls._lock:
            if cls._loop is None or cls._thread is None or not cls._thread.is_alive():
                loop = asyncio.new_event_loop()
                ready = threading.Event()

                def serve() -> None:
                    asyncio.set_event_loop(loop)
                    loop.call_soon(ready.set)
                    loop.run_forever()

                cls._thread = threading.Thread(target=serve, name="poly-epo-judge-loop", daemon=True)
                cls._thread.start()
                ready.wait()
                cls._loop = loop
            return cls._loop

    @classmethod
    def submit(cls, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Schedule ``coro`` on the judge loop; the future's ``result()`` returns or raises what it did."""
        loop = cls.get()
        if threading.current_thread() is cls._thread:
            coro.close()
            raise RuntimeError("Called from the judge loop itself: await the coroutine instead.")
        return asyncio.run_coroutine_threadsafe(coro, loop)


FALLBACKS = ("distinct", "grpo", "skip", "raise")
FALLBACK_WARNING_SECONDS = 60.0
OUTAGE_LOG_SECONDS = 60.0
OUTAGE_RETRY_PAUSE = 1.0  # between rounds of a group waiting out an outage (the breaker spaces the probes)
ALWAYS_LOGGED = ("invalid_answers", "retries")


@dataclass
class JudgeResult:
    """One group's verdict. ``fallback`` is None when a judge answered; otherwise "distinct" (``labels`` gives every
    completion its own cluster), "grpo" or "skip" (no labels: the trainer uses Dr.GRPO's advantage, or 0), and
    ``cause`` says why."""

    labels: list[int] | None
    judge: str
    fallback: str | None = None
    cause: str | None = None


JUDGING_FAILURES = (JudgeError, ValueError, OSError)
"""What a judge may fail with and fall back from: the judges' own errors, an answer of the wrong shape (ValueError)
and I/O errors (OSError: connections, timeouts) of a user's judge function. Anything else is a bug and surfaces with
its traceback instead of turning into a fallback."""


class ClusteringJudge:
    """Clusters groups of completions by strategy, concurrently, and never fails a batch unless told to.

    Subclasses implement ``acluster(prompt, completions)`` for one group. A completion that is a list of chat
    messages (an agent's trajectory) reaches ``acluster`` as ``view(completion)``: by default ``text.trajectory_text``
    (each turn with its role, tool calls as ``name(arguments)``, tool results marked and cut); a plain completion
    reaches it unchanged. ``cluster_groups`` judges a batch with at
    most ``max_concurrency`` groups in flight, checks every answer has one integer id per completion, and renumbers
    ids densely. When a group's judging fails, the judges in ``chain`` are tried in turn, then ``fallback`` applies:
    "distinct", "grpo", "skip" (see JudgeResult) or "raise". ``stats`` counts what happened since ``pop_stats()``.

    With ``max_outage_seconds`` > 0 (the trainer sets it from ``judge_max_outage_seconds``), a group whose judge got
    no answer from its service (``ServiceError``, ``CircuitOpen``) and no answer from the chain does not fall back:
    it waits for the service and asks again, logging a line a minute, until the service has been down that long;
    then ``JudgeOutage``. Any answer from the service ends the outage.
    """

    max_outage_seconds: float = 0.0

    name = "judge"

    def __init__(
        self,
        max_concurrency: int = 32,
        degenerate_cluster_id: int = DEGENERATE_CLUSTER_ID,
        fallback: str = "raise",
        chain: Sequence[ClusteringJudge] = (),
        tool_result_chars: int | None = TOOL_RESULT_CHARS,
    ) -> None:
        if max_concurrency < 1:
            raise ValueError(f"max_concurrency must be at least 1, got {max_concurrency}.")
        if fallback not in FALLBACKS:
            raise ValueError(f"fallback must be one of {FALLBACKS}, got {fallback!r}.")
        self.max_concurrency = max_concurrency
        self.degenerate_cluster_id = degenerate_cluster_id
        self.fallback = fallback
        self.chain = list(chain)
        self.tool_result_chars = tool_result_chars
        self.stats: Counter[str] = Counter()
        self.latencies: list[float] = []
        self.last_failure: str | None = None
        self._fallback_warning = RateLimitedWarning(FALLBACK_WARNING_SECONDS)
        self._outage_warning = RateLimitedWarning(OUTAGE_LOG_SECONDS)
        self.outage_since: float | None = None  # time.monotonic() when the service stopped answering
        self._outage_began = ""  # the same moment on the clock, for the log

    async def acluster(self, prompt: str, completions: list[str]) -> list[int]:
        raise NotImplementedError

    def view(self, completion: Any) -> Any:
        """What this judge reads of one completion: ``text.trajectory_text`` with tool results cut to their last
        ``tool_result_chars`` characters (a plain completion unchanged)."""
        return trajectory_text(completion, self.tool_result_chars)

    def views(self, completions: Sequence[Any]) -> list[Any]:
        """What this judge reads of each completion (``view``)."""
        return [self.view(completion) for completion in completions]

    async def ajudge(self, prompt: str, completions: list[str]) -> JudgeResult:
        """One group through this judge, then the chain, then (an outage waited out first) the fallback."""
        while True:
            own_error: Exception | None = None
            for judge in [self, *self.chain]:
                try:
                    ids = await judge.acluster(prompt, judge.views(completions))
                    labels = judge.check_labels(ids, len(completions))
                except JUDGING_FAILURES as error:
                    self.stats[f"failed/{judge.name}"] += 1
                    own_error = error if judge is self else own_error
                    last_error = error
                    continue
                if judge is self:
                    self.outage_since = None
                else:
                    self.stats[f"answered_by/{judge.name}"] += 1
                    self.stats.update({f"{judge.name}/{k}": v for k, v in judge.pop_stats().items()})
                return JudgeResult(labels, judge.name)
            if not (self.max_outage_seconds > 0 and isinstance(own_error, (ServiceError, CircuitOpen))):
                if own_error is not None:
                    self.outage_since = None  # the service answered (a 4xx, an invalid answer): it is up
                break
            await self._wait_out_outage(own_error)
        if self.fallback == "raise":
            raise JudgeError(f"{self.where()} could not judge a group: {last_error}") from last_error
        self.stats[f"fallback/{self.fallback}"] += 1
        self.last_failure = str(last_error)
        self._fallback_warning(
            lambda suppressed: logger.warning(
                "%s: a group fell back to %r%s. Cause: %s. judge/fallback_frac tracks this per step; the run stops "
                "when it stays above judge_max_fallback_frac for judge_fallback_patience steps.",
                self.where(),
                self.fallback,
                f" ({suppressed} more since the last warning)" if suppressed else "",
                last_error,
            )
        )
        labels = list(range(len(completions))) if self.fallback == "distinct" else None
        return JudgeResult(labels, self.name, self.fallback, self.last_failure)

    async def _wait_out_outage(self, error: Exception) -> None:
        """The service did not answer this group: log (a line a minute), pause, and return to ask again; or
        ``JudgeOutage`` once it has been down for ``max_outage_seconds``."""
        now = time.monotonic()
        if self.outage_since is None:
            self.outage_since = now
            self._outage_began = time.strftime("%H:%M:%S %Z")
            self.stats["outages"] += 1
        down = now - self.outage_since
        self.stats["outage_waits"] += 1
        if down >= self.max_outage_seconds:
            raise JudgeOutage(
                f"{self.where()} has not answered for {_duration(down)}, longer than judge_max_outage_seconds="
                f"{self.max_outage_seconds:g}. Last failure: {error}"
            ) from error
        self._outage_warning(
            lambda suppressed: logger.warning(
                "%s is down: no answer for %s, since %s (last failure: %s). Training waits before this step's "
                "update and goes on when it answers; nothing falls back meanwhile. Start or fix the judge server (or "
                "its network); the run saves a checkpoint and stops after judge_max_outage_seconds=%g (%s left).",
                self.where(),
                _duration(down),
                self._outage_began,
                error,
                self.max_outage_seconds,
                _duration(self.max_outage_seconds - down),
            )
        )
        await asyncio.sleep(min(OUTAGE_RETRY_PAUSE, self.max_outage_seconds - down))

    def group_concurrency(self) -> int:
        """Groups judged at once. Judges that call a service start every group at once and bound the requests in
        flight themselves, so that during an outage all groups wait it out together rather than in turns."""
        return self.max_concurrency

    async def ajudge_groups(self, groups: Sequence[Group]) -> list[JudgeResult]:
        semaphore = asyncio.Semaphore(self.group_concurrency())

        async def one(prompt: str, completions: Sequence[str]) -> JudgeResult:
            async with semaphore:
                return await self.ajudge(prompt, list(completions))

        return list(await asyncio.gather(*(one(p, c) for p, c in groups)))

    def submit_groups(self, groups: Sequence[Group]) -> concurrent.futures.Future[list[JudgeResult]]:
        """Start judging a batch of (prompt, completions) groups on the judge loop and return at once; the future's
        ``result()`` is one JudgeResult per group (or the error that stopped the batch)."""

        async def timed() -> list[JudgeResult]:
            start = time.perf_counter()
            results = await self.ajudge_groups(groups) if groups else []
            self.stats["groups"] += len(groups)
            self.stats["seconds"] += time.perf_counter() - start
            return results

        return JudgeLoop.submit(timed())

    def judge_groups(self, groups: Sequence[Group]) -> list[JudgeResult]:
        """Judge a batch of (prompt, completions) groups; one JudgeResult per group."""
        if not groups:
            return []
        return self.submit_groups(groups).result()

    def cluster_groups(self, groups: Sequence[Group]) -> list[list[int] | None]:
        """Judge a batch of groups; one list of ids per group (None where the fallback is "grpo" or "skip")."""
        return [result.labels for result in self.judge_groups(groups)]

    def __call__(self, prompt: str, completions: list[str]) -> list[int] | None:
        return self.cluster_groups([(prompt, completions)])[0]

    def where(self) -> str:
        """The judge as named in warnings and errors."""
        return f"the {self.name} judge"

    def check_labels(self, labels: Sequence[int], expected: int) -> list[int]:
        if len(labels) != expected or not all(isinstance(x, int) and not isinstance(x, bool) for x in labels):
            raise ValueError(f"{self.name} returned {labels!r}: expected {expected} integer cluster ids.")
        return normalize_labels(labels, self.degenerate_cluster_id)

    def pop_stats(self) -> dict[str, float]:
        stats, self.stats = dict(self.stats), Counter()
        return stats

    def pop_latencies(self) -> list[float]:
        """Seconds from sending to the end of the reply of each answered request since the last call."""
        latencies, self.latencies = self.latencies, []
        return latencies


def _duration(seconds: float) -> str:
    """``42 s``, ``3 min 5 s``, ``2 h 10 min``."""
    seconds = max(0, int(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60} min"


class RateLimitedWarning:
    """Calls ``emit(suppressed)`` at most once per ``seconds``; ``suppressed`` counts the calls skipped since."""

    def __init__(self, seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
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


def step_metrics(stats: dict[str, float], latencies: Sequence[float]) -> dict[str, float]:
    """One step's judge metrics from summed counters and all request latencies: every counter, plus
    ``fallback_frac`` (groups that fell back / groups judged), ``latency_p50`` / ``latency_p95``, and zeros for the
    counters a dashboard should always show."""
    metrics = {name: float(value) for name, value in stats.items() if name != "seconds"}
    groups = stats.get("groups", 0)
    fell_back = sum(value for name, value in stats.items() if name.startswith("fallback/"))
    metrics["fallback_frac"] = fell_back / groups if groups else 0.0
    for name in ALWAYS_LOGGED:
        metrics.setdefault(name, 0.0)
    if latencies:
        metrics["latency_p50"], metrics["latency_p95"] = (float(p) for p in np.percentile(latencies, [50, 95]))
    return metrics


class CallableJudge(ClusteringJudge):
    """Wraps a plain function ``judge(prompt, completions) -> list[int]`` (sync or async). Like a TRL reward
    function, it receives the completions themselves: strings, or an agent's lists of chat messages (with their
    ``tool_calls`` and tool results; images replaced by ``{"type": "image"}``)."""

    @staticmethod
    def view(completion: Any) -> Any:
        return completion

    def __init__(self, fn: Callable[..., Any], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.fn = fn
        self.name = getattr(fn, "__name__", type(fn).__name__)

    async def acluster(self, prompt: str, completions: list[str]) -> list[int]:
        """An ``async def`` judge is awaited; a plain function runs in a worker thread (``asyncio.to_thread``, as TRL
        runs async rewards beside sync work), so the groups of a batch are judged concurrently."""
        if is_async_callable(self.fn):
            result = await self.fn(prompt, completions)
        else:
            result = await asyncio.to_thread(self.fn, prompt, completions)
            if asyncio.iscoroutine(result):
                result = await result
        return [int(x) if not isinstance(x, bool) and float(x).is_integer() else x for x in result]


class DistinctJudge(ClusteringJudge):
    """Every completion is its own cluster (the authors' fallback when the judge fails)."""

    name = "distinct"

    async def acluster(self, prompt: str, completions: list[str]) -> list[int]:
        return list(range(len(completions)))
