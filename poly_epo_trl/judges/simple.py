"""The judges that need no model: a plain function as a judge, and every completion its own cluster."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Hashable, Iterable
from typing import Any

from ..constants import DEGENERATE_CLUSTER_ID
from .base import ClusteringJudge, distinct_labels


def clusters_by(keys: Iterable[Hashable | None]) -> list[int]:
    """One cluster per distinct key, numbered in order of first appearance; a None key (nothing well-formed to
    compare) is degenerate: the cluster ids of a judge that reads one exact key per completion."""
    ids: dict[Hashable, int] = {}
    return [DEGENERATE_CLUSTER_ID if key is None else ids.setdefault(key, len(ids)) for key in keys]


class CallableJudge(ClusteringJudge):
    """Wraps a plain function ``judge(prompt, completions) -> list[int]`` (sync or async). Like a TRL reward
    function, it receives the completions themselves: strings, or an agent's lists of chat messages (with their
    ``tool_calls`` and tool results; images replaced by ``{"type": "image"}``)."""

    @staticmethod
    def view(completion: Any, agent: bool = False) -> Any:
        return completion

    def __init__(self, fn: Callable[..., Any], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.fn = fn
        self.name = getattr(fn, "__name__", type(fn).__name__)

    async def acluster(self, prompt: str, completions: list[str]) -> list[int]:
        """An ``async def`` judge is awaited; a plain function runs in a worker thread (``asyncio.to_thread``, as TRL
        runs async rewards beside sync work), so the groups of a batch are judged concurrently."""
        from trl.trainer.utils import is_async_callable  # TRL's test of a callable, loaded on first use

        if is_async_callable(self.fn):
            result = await self.fn(prompt, completions)
        else:
            result = await asyncio.to_thread(self.fn, prompt, completions)
            if asyncio.iscoroutine(result):
                result = await result
        return [int(x) if not isinstance(x, bool) and float(x).is_integer() else x for x in result]


class DistinctJudge(ClusteringJudge):
    """Every completion is its own cluster (the authors' fallback when the judge fails), none of them degenerate."""

    name = "distinct"

    async def acluster(self, prompt: str, completions: list[str]) -> list[int]:
        return distinct_labels(len(completions), self.degenerate_cluster_id)
