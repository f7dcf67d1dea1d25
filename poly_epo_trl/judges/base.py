"""The clustering-judge interface: a prompt and its N completions in, N strategy ids out (100 = degenerate). What a
user writes: ``acluster`` (and, if the judge reads completions its own way, ``view``). The pipeline around a judge
(its chain, fallback, waiting out outages, counters) is ``pipeline.JudgePipeline``, which calls ``answer``; a judge
alone is called as ``judge(prompt, completions)`` or ``judge.cluster_groups(groups)``."""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from ..constants import DEGENERATE_CLUSTER_ID
from ..text import TOOL_RESULT_CHARS, is_trajectory, trajectory_text
from .loop import JudgeLoop

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


def distinct_labels(size: int, degenerate_cluster_id: int = DEGENERATE_CLUSTER_ID) -> list[int]:
    """Every completion of a group of ``size`` its own cluster, 0, 1, 2, ... stepping over the degenerate id (with it
    at 0, the ids are 1..size; in a group of 101 with it at 100, the last is 101): a fallback that never marks a
    completion degenerate."""
    return [i + (0 <= degenerate_cluster_id <= i) for i in range(size)]


@dataclass
class Clusters:
    """A judge's answer for one group that names its strategies: an id and a description (None where the judge gave
    none) per completion, and what its reply held beyond them, read past (``ignored``: an LM judge's extra keys, for
    the audit trail). ``acluster`` returns this, or the ids alone."""

    ids: list[int]
    strategies: list[str | None] | None
    ignored: dict[str, Any] | None = None


class ClusteringJudge:
    """Clusters one group of completions by strategy: subclasses implement ``acluster(prompt, completions)``.

    A completion that is a list of chat messages (an agent's trajectory) reaches ``acluster`` as ``view(completion)``:
    by default ``text.trajectory_text`` (each turn with its role, tool calls as ``name(arguments)``, tool results
    marked and cut to ``tool_result_chars``); a plain completion reaches it unchanged. ``max_concurrency`` bounds the
    groups judged at once; ``stats`` and ``latencies`` count what the judge itself did (requests, retries, invalid
    answers, tokens) since ``pop_stats()`` / ``pop_latencies()``. The pipeline around it checks every answer has one
    integer id per completion and renumbers ids densely (``check_labels``)."""

    name = "judge"

    def __init__(
        self,
        max_concurrency: int = 32,
        degenerate_cluster_id: int = DEGENERATE_CLUSTER_ID,
        tool_result_chars: int | None = TOOL_RESULT_CHARS,
    ) -> None:
        if max_concurrency < 1:
            raise ValueError(f"max_concurrency must be at least 1, got {max_concurrency}.")
        self.max_concurrency = max_concurrency
        self.degenerate_cluster_id = degenerate_cluster_id
        self.tool_result_chars = tool_result_chars
        self.stats: Counter[str] = Counter()
        self.latencies: list[float] = []

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

    @contextlib.contextmanager
    def retries_within(self, budget: float) -> Iterator[None]:
        """While open, a judge that retries its service gives a group at most ``budget`` seconds."""
        yield

    def group_concurrency(self) -> int:
        """Groups judged at once. Judges that call a service start every group at once and bound the requests in
        flight themselves, so that during an outage all groups wait it out together rather than in turns."""
        return self.max_concurrency

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

    async def answer(self, prompt: str, completions: Sequence[Any]) -> Clusters:
        """One group's verdict as a pipeline takes it: ``acluster`` of this judge's views of the completions, the ids
        checked and renumbered (``check_labels``), the strategies checked (None where the judge named none)."""
        answer = await self.acluster(prompt, self.views(completions))
        named = isinstance(answer, Clusters)
        labels = self.check_labels(answer.ids if named else answer, len(completions))
        strategies = self.check_strategies(answer.strategies, len(completions)) if named else None
        return Clusters(labels, strategies, answer.ignored if named else None)

    def cluster_groups(self, groups: Sequence[Group]) -> list[list[int]]:
        """Judge a batch of groups with this judge alone (no chain, no fallback: a failure raises),
        ``group_concurrency`` at once on the judge loop; one list of ids per group."""

        async def judge_all() -> list[list[int]]:
            semaphore = asyncio.Semaphore(self.group_concurrency())

            async def one(prompt: str, completions: Sequence[Any]) -> list[int]:
                async with semaphore:
                    return (await self.answer(prompt, list(completions))).ids

            return list(await asyncio.gather(*(one(prompt, completions) for prompt, completions in groups)))

        return JudgeLoop.submit(judge_all()).result() if groups else []

    def __call__(self, prompt: str, completions: list[str]) -> list[int]:
        return self.cluster_groups([(prompt, completions)])[0]
