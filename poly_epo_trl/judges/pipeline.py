"""The pipeline around a judge: a group through the judge, then the judges of its chain, then (an outage waited out
first) the fallback; a batch of groups concurrently on the judge loop; the counters of what happened. The trainer,
the evaluation and judge-agreement hold one, built from a ``specs.JudgeSpec`` (or around a user's judge)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from .base import ClusteringJudge, Group, distinct_labels
from .errors import CircuitOpen, JudgeError, ServiceError
from .loop import JudgeLoop
from .outage import OutageWait, RateLimitedWarning

logger = logging.getLogger(__name__)
FALLBACKS = ("distinct", "grpo", "skip", "raise")
FALLBACK_WARNING_SECONDS = 60.0
PROBE = ("What is 2 + 3?", ["2 + 3 = 5, so the answer is \\boxed{5}.", "Counting on from 2: 3, 4, 5. \\boxed{5}"])
PROBE_BUDGET_SECONDS = 15.0  # how long a judge's service may take to answer the probe group before training


@dataclass
class JudgeResult:
    """One group's verdict. ``fallback`` is None when a judge answered; otherwise "distinct" (``labels`` gives every
    completion its own cluster), "grpo" or "skip" (no labels: the trainer uses Dr.GRPO's advantage, or 0), and
    ``cause`` says why. ``strategies``: the answering judge's description per completion, where it gives them;
    ``seconds``: from the group's start to its verdict (chain, retries and waiting out an outage included);
    ``ignored``: what the answering judge's reply held beyond the ids, read past (None: nothing)."""

    labels: list[int] | None
    judge: str
    fallback: str | None = None
    cause: str | None = None
    strategies: list[str | None] | None = None
    seconds: float = 0.0
    ignored: dict | None = None


JUDGING_FAILURES = (JudgeError, ValueError, OSError)
"""What a judge may fail with and fall back from: the judges' own errors, an answer of the wrong shape (ValueError)
and I/O errors (OSError: connections, timeouts) of a user's judge function. Anything else is a bug and surfaces with
its traceback instead of turning into a fallback."""


class JudgePipeline:
    """``judge``, then the judges of ``chain`` for the groups it fails on, then ``fallback``: "distinct", "grpo",
    "skip" (see JudgeResult) or "raise". Never fails a batch unless told to.

    With ``max_outage_seconds`` > 0, a group whose judge got no answer from its service (``ServiceError``,
    ``CircuitOpen``) and no answer from the chain does not fall back: it waits for the service and asks again
    (``outage.OutageWait``: a line a minute) until the service has been down that long; then ``JudgeOutage``. Any
    answer from the service ends the outage. ``stats`` counts what the pipeline did (groups, seconds, failures,
    fallbacks, outages); ``pop_stats`` adds the judge's own."""

    def __init__(
        self,
        judge: ClusteringJudge,
        chain: Sequence[ClusteringJudge] = (),
        fallback: str = "raise",
        max_outage_seconds: float = 0.0,
    ) -> None:
        if fallback not in FALLBACKS:
            raise ValueError(f"fallback must be one of {FALLBACKS}, got {fallback!r}.")
        self.judge, self.chain = judge, tuple(chain)
        self.fallback, self.max_outage_seconds = fallback, max_outage_seconds
        self.stats: Counter[str] = Counter()
        self.last_failure: str | None = None
        self.outage = OutageWait()
        self._fallback_warning = RateLimitedWarning(FALLBACK_WARNING_SECONDS)

    @property
    def name(self) -> str:
        return self.judge.name

    @property
    def degenerate_cluster_id(self) -> int:
        return self.judge.degenerate_cluster_id

    def where(self) -> str:
        """The judge as named in warnings and errors."""
        return self.judge.where()

    async def ajudge(self, prompt: str, completions: list) -> JudgeResult:
        """One group through the judge, then the chain, then (an outage waited out first) the fallback."""
        start = time.perf_counter()
        while True:
            own_error: Exception | None = None
            for judge in (self.judge, *self.chain):
                try:
                    answer = await judge.answer(prompt, completions)
                except JUDGING_FAILURES as error:
                    self.stats[f"failed/{judge.name}"] += 1
                    own_error = error if judge is self.judge else own_error
                    last_error = error
                    continue
                if judge is self.judge:
                    self.outage.answered()
                else:
                    self.stats[f"answered_by/{judge.name}"] += 1
                    self.stats.update({f"{judge.name}/{k}": v for k, v in judge.pop_stats().items()})
                seconds = time.perf_counter() - start
                return JudgeResult(
                    answer.ids, judge.name, strategies=answer.strategies, seconds=seconds, ignored=answer.ignored
                )
            if not (self.max_outage_seconds > 0 and isinstance(own_error, (ServiceError, CircuitOpen))):
                if own_error is not None:
                    self.outage.answered()  # the service answered (a 4xx, an invalid answer): it is up
                break
            await self.outage.wait(own_error, self.max_outage_seconds, self.where(), self.stats)
        if self.fallback == "raise":
            raise JudgeError(f"{self.where()} could not judge a group: {last_error}") from last_error
        return self.fall_back(len(completions), last_error, time.perf_counter() - start)

    def fall_back(self, size: int, error: Exception, seconds: float) -> JudgeResult:
        """The fallback's verdict on a group of ``size`` no judge could cluster, said in the log (rate-limited)."""
        self.stats[f"fallback/{self.fallback}"] += 1
        self.last_failure = str(error)
        self._fallback_warning(
            lambda suppressed: logger.warning(
                "%s: a group fell back to %r%s. Cause: %s. judge/fallback_frac tracks this per step; the run stops "
                "when it stays above judge_max_fallback_frac for judge_fallback_patience steps.",
                self.where(),
                self.fallback,
                f" ({suppressed} more since the last warning)" if suppressed else "",
                error,
            )
        )
        labels = distinct_labels(size, self.degenerate_cluster_id) if self.fallback == "distinct" else None
        return JudgeResult(labels, self.judge.name, self.fallback, self.last_failure, seconds=seconds)

    def check_answers(self, who: str = "The judge", budget: float = PROBE_BUDGET_SECONDS) -> None:
        """``probe`` before training, every entry point's one check: ValueError "``who`` did not answer a probe group
        within ``budget`` s: <why>." where the judge cannot answer (the caller adds what to set)."""
        try:
            self.probe(budget)
        except Exception as error:
            raise ValueError(f"{who} did not answer a probe group within {budget:g}s: {error}.") from None

    def probe(self, budget: float) -> None:
        """Judge one probe group with the judge alone: no chain, no fallback, no waiting out an outage, and its
        service retried for at most ``budget`` seconds. Raises what the judge failed with; its counters are left
        as they were."""
        judge = self.judge
        saved = judge.stats, judge.latencies
        judge.stats, judge.latencies = Counter(), []
        try:
            with judge.retries_within(budget):
                JudgeLoop.submit(judge.answer(*PROBE)).result()
        finally:
            judge.stats, judge.latencies = saved

    async def ajudge_groups(self, groups: Sequence[Group]) -> list[JudgeResult]:
        semaphore = asyncio.Semaphore(self.judge.group_concurrency())

        async def one(prompt: str, completions: Sequence) -> JudgeResult:
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

    def __call__(self, prompt: str, completions: list) -> list[int] | None:
        return self.cluster_groups([(prompt, completions)])[0]

    def pop_stats(self) -> dict[str, float]:
        """What the judge and the pipeline counted since the last call."""
        stats, own = self.judge.pop_stats(), self.stats
        self.stats = Counter()
        for name, value in own.items():
            stats[name] = stats.get(name, 0) + value
        return stats

    def pop_latencies(self) -> list[float]:
        return self.judge.pop_latencies()

    def __repr__(self) -> str:
        chain = f", chain={list(self.chain)}" if self.chain else ""
        return f"JudgePipeline({self.judge!r}{chain}, fallback={self.fallback!r})"
