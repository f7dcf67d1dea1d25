"""The clustering-judge interface: a prompt and its N completions in, N strategy ids out (100 = degenerate)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections import Counter
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, TypeVar

from ..advantages.objectives import DEGENERATE_CLUSTER_ID

T = TypeVar("T")
Group = tuple[str, Sequence[str]]
JudgeFn = Callable[[str, list[str]], list[int]]


def normalize_labels(labels: Sequence[int], degenerate_cluster_id: int = DEGENERATE_CLUSTER_ID) -> list[int]:
    """Renumber ids densely in order of first appearance (0, 1, 2, ...), keeping the degenerate id."""
    mapping: dict[int, int] = {}
    out = []
    for label in labels:
        if label == degenerate_cluster_id:
            out.append(degenerate_cluster_id)
        else:
            out.append(mapping.setdefault(label, len(mapping)))
    return out


def run_coroutine(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine to completion from sync code, also when an event loop is already running (Jupyter)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    result: dict[str, Any] = {}

    def target() -> None:
        try:
            result["value"] = asyncio.run(coro)
        except BaseException as error:
            result["error"] = error

    thread = threading.Thread(target=target, name="poly-epo-judge")
    thread.start()
    thread.join()
    if "error" in result:
        raise result["error"]
    return result["value"]


class ClusteringJudge:
    """Clusters groups of completions by strategy, concurrently.

    Subclasses implement ``acluster(prompt, completions)`` for one group. ``cluster_groups`` judges a batch with at
    most ``max_concurrency`` groups in flight, checks every answer has one id per completion, and renumbers ids
    densely. ``stats`` counts what happened since the last ``pop_stats()``, for the trainer's metrics.
    """

    name = "judge"

    def __init__(self, max_concurrency: int = 32, degenerate_cluster_id: int = DEGENERATE_CLUSTER_ID) -> None:
        if max_concurrency < 1:
            raise ValueError(f"max_concurrency must be at least 1, got {max_concurrency}.")
        self.max_concurrency = max_concurrency
        self.degenerate_cluster_id = degenerate_cluster_id
        self.stats: Counter[str] = Counter()

    async def acluster(self, prompt: str, completions: list[str]) -> list[int]:
        raise NotImplementedError

    async def acluster_groups(self, groups: Sequence[Group]) -> list[list[int]]:
        semaphore = asyncio.Semaphore(self.max_concurrency)

        async def one(prompt: str, completions: Sequence[str]) -> list[int]:
            async with semaphore:
                labels = await self.acluster(prompt, list(completions))
            return self.check_labels(labels, len(completions))

        return list(await asyncio.gather(*(one(p, c) for p, c in groups)))

    def cluster_groups(self, groups: Sequence[Group]) -> list[list[int]]:
        """Judge a batch of (prompt, completions) groups; returns one list of ids per group."""
        if not groups:
            return []
        start = time.perf_counter()
        labels = run_coroutine(self.acluster_groups(groups))
        self.stats["groups"] += len(groups)
        self.stats["seconds"] += time.perf_counter() - start
        return labels

    def __call__(self, prompt: str, completions: list[str]) -> list[int]:
        return self.cluster_groups([(prompt, completions)])[0]

    def check_labels(self, labels: Sequence[int], expected: int) -> list[int]:
        if len(labels) != expected or not all(isinstance(x, int) and not isinstance(x, bool) for x in labels):
            raise ValueError(f"{self.name} returned {labels!r}: expected {expected} integer cluster ids.")
        return normalize_labels(labels, self.degenerate_cluster_id)

    def pop_stats(self) -> dict[str, float]:
        stats, self.stats = dict(self.stats), Counter()
        return stats


class CallableJudge(ClusteringJudge):
    """Wraps a plain function ``judge(prompt, completions) -> list[int]`` (sync or async)."""

    def __init__(self, fn: Callable[..., Any], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.fn = fn
        self.name = getattr(fn, "__name__", type(fn).__name__)

    async def acluster(self, prompt: str, completions: list[str]) -> list[int]:
        result = self.fn(prompt, completions)
        if asyncio.iscoroutine(result):
            result = await result
        return [int(x) if not isinstance(x, bool) and float(x).is_integer() else x for x in result]


class DistinctJudge(ClusteringJudge):
    """Every completion is its own cluster (the authors' fallback when the judge fails)."""

    name = "distinct"

    async def acluster(self, prompt: str, completions: list[str]) -> list[int]:
        return list(range(len(completions)))
