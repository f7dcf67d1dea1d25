"""The clustering-judge interface: a prompt and its N completions in, N strategy ids out (100 = degenerate)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from ..constants import DEGENERATE_CLUSTER_ID
from ..text import TOOL_RESULT_CHARS, is_trajectory, trajectory_text
from .errors import CircuitOpen, JudgeError, ServiceError
from .loop import JudgeLoop
from .resilience import OutageWait, RateLimitedWarning

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


FALLBACKS = ("distinct", "grpo", "skip", "raise")
FALLBACK_WARNING_SECONDS = 60.0
PROBE = ("What is 2 + 3?", ["2 + 3 = 5, so the answer is \\boxed{5}.", "Counting on from 2: 3, 4, 5. \\boxed{5}"])


@dataclass
class Clusters:
    """A judge's answer for one group that names its strategies: an id and a description (None where the judge gave
    none) per completion. ``acluster`` returns this, or the ids alone."""

    ids: list[int]
    strategies: list[str | None]


@dataclass
class JudgeResult:
    """One group's verdict. ``fallback`` is None when a judge answered; otherwise "distinct" (``labels`` gives every
    completion its own cluster), "grpo" or "skip" (no labels: the trainer uses Dr.GRPO's advantage, or 0), and
    ``cause`` says why. ``strategies``: the answering judge's description per completion, where it gives them;
    ``seconds``: from the group's start to its verdict (chain, retries and waiting out an outage included)."""

    labels: list[int] | None
    judge: str
    fallback: str | None = None
    cause: str | None = None
    strategies: list[str | None] | None = None
    seconds: float = 0.0


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

    With ``max_outage_seconds`` > 0 (``JudgeSettings.make_judge`` sets it from ``judge_max_outage_seconds``), a
    group whose judge got no answer from its service (``ServiceError``, ``CircuitOpen``) and no answer from the chain
    does not fall back: it waits for the service and asks again (``resilience.OutageWait``: a line a minute) until
    the service has been down that long; then ``JudgeOutage``. Any answer from the service ends the outage.
    """

    max_outage_seconds: float = 0.0
    tools: str | None = None  # what an agent could call (``prompts.describe_tools``), for prompts that show it

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
        self.outage = OutageWait()

    async def acluster(self, prompt: str, completions: list[str]) -> list[int] | Clusters:
        """One group's ids, or its ids with their strategies' descriptions (``Clusters``)."""
        raise NotImplementedError

    def view(self, completion: Any, agent: bool = False) -> Any:
        """What this judge reads of one completion: ``text.trajectory_text`` with tool results cut to their last
        ``tool_result_chars`` characters (a plain completion unchanged; with ``agent``, a lone message is an answer
        without a tool call)."""
        return trajectory_text(completion, self.tool_result_chars, agent)

    def views(self, completions: Sequence[Any]) -> list[Any]:
        """What this judge reads of each completion (``view``). In a group where any completion is a trajectory, each
        is viewed as an agent's (``agent=True``): a completion that called no tool reads as an answer without a
        call, not as a blob beside the others' turns."""
        if any(is_trajectory(c) for c in completions):
            return [self.view(completion, agent=True) for completion in completions]
        return [self.view(completion) for completion in completions]

    async def ajudge(self, prompt: str, completions: list[str]) -> JudgeResult:
        """One group through this judge, then the chain, then (an outage waited out first) the fallback."""
        start = time.perf_counter()
        while True:
            own_error: Exception | None = None
            for judge in [self, *self.chain]:
                try:
                    answer = await judge.acluster(prompt, judge.views(completions))
                    named = isinstance(answer, Clusters)
                    labels = judge.check_labels(answer.ids if named else answer, len(completions))
                    strategies = judge.check_strategies(answer.strategies, len(completions)) if named else None
                except JUDGING_FAILURES as error:
                    self.stats[f"failed/{judge.name}"] += 1
                    own_error = error if judge is self else own_error
                    last_error = error
                    continue
                if judge is self:
                    self.outage.answered()
                else:
                    self.stats[f"answered_by/{judge.name}"] += 1
                    self.stats.update({f"{judge.name}/{k}": v for k, v in judge.pop_stats().items()})
                return JudgeResult(labels, judge.name, strategies=strategies, seconds=time.perf_counter() - start)
            if not (self.max_outage_seconds > 0 and isinstance(own_error, (ServiceError, CircuitOpen))):
                if own_error is not None:
                    self.outage.answered()  # the service answered (a 4xx, an invalid answer): it is up
                break
            await self.outage.wait(own_error, self.max_outage_seconds, self.where(), self.stats)
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
        return JudgeResult(labels, self.name, self.fallback, self.last_failure, seconds=time.perf_counter() - start)

    def tell_tools(self, tools: str | None) -> None:
        """What the agent could call (``prompts.describe_tools``), for judges whose prompt shows it (the ``agent``
        template's ``$tools``); the judges of the chain are told too."""
        self.tools = tools
        for judge in self.chain:
            judge.tell_tools(tools)

    def probe(self, budget: float) -> None:
        """Judge one probe group with this judge alone: no chain, no fallback, no waiting out an outage, and its
        service retried for at most ``budget`` seconds. Raises what the judge failed with; its counters are left
        as they were."""
        saved = self.stats, self.latencies
        self.stats, self.latencies = Counter(), []
        try:
            with self.retries_within(budget):
                answer = JudgeLoop.submit(self.acluster(PROBE[0], self.views(PROBE[1]))).result()
            self.check_labels(answer.ids if isinstance(answer, Clusters) else answer, len(PROBE[1]))
        finally:
            self.stats, self.latencies = saved

    @contextlib.contextmanager
    def retries_within(self, budget: float) -> Iterator[None]:
        """While open, a judge that retries its service gives a group at most ``budget`` seconds."""
        yield

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

    def check_strategies(self, strategies: Sequence[str | None], expected: int) -> list[str | None]:
        if len(strategies) != expected or not all(s is None or isinstance(s, str) for s in strategies):
            raise ValueError(f"{self.name} described {strategies!r}: expected {expected} strategies (str or None).")
        return list(strategies)

    def pop_stats(self) -> dict[str, float]:
        stats, self.stats = dict(self.stats), Counter()
        return stats

    def pop_latencies(self) -> list[float]:
        """Seconds from sending to the end of the reply of each answered request since the last call."""
        latencies, self.latencies = self.latencies, []
        return latencies
