"""One checkpoint's evaluation: sample what is missing, score what is unscored, compute per-problem metrics."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

from .report import problem_metrics
from .sampling import Sampler, SamplingSettings, TransformersSampler
from .scoring import Scorer
from .store import SampleStore

logger = logging.getLogger(__name__)


def evaluate_checkpoint(
    rows: Sequence[dict[str, Any]],
    store: SampleStore,
    make_sampler: Callable[[], Sampler],
    scorer: Scorer,
    chunk_size: int = 8,
    correct_threshold: float = 1.0,
    maj_subsets: int = 200,
    label: str = "",
) -> list[dict[str, Any]]:
    """Per-problem metrics for ``rows`` (dataset rows with ``prompt``, in index order), chunk by chunk: sample,
    write, score, write. Problems already sampled are not sampled again, nor scored ones scored again, so a killed
    run loses at most one chunk. The sampler (the model) is only built when something is left to sample."""
    samples, scores = store.read("samples"), store.read("scores")
    if samples:
        logger.info(
            "%s: resuming with %d sampled and %d scored of %d problems", label, len(samples), len(scores), len(rows)
        )

    def score(chunk: list[int]) -> None:
        records = scorer.score([rows[i] for i in chunk], [samples[i]["completions"] for i in chunk])
        records = [{"index": i, **r} for i, r in zip(chunk, records, strict=True)]
        store.append("scores", records)
        scores.update((r["index"], r) for r in records)

    unscored = [i for i in range(len(rows)) if i in samples and i not in scores]
    for at in range(0, len(unscored), chunk_size):
        score(unscored[at : at + chunk_size])
    sample_missing(rows, store, samples, make_sampler, chunk_size, label, after_chunk=score)
    return [
        problem_metrics(
            scores[i]["rewards"],
            scores[i]["answers"],
            scores[i]["clusters"],
            correct_threshold=correct_threshold,
            maj_subsets=maj_subsets,
            seed=i,
        )
        for i in range(len(rows))
    ]


def sample_missing(
    rows: Sequence[dict[str, Any]],
    store: SampleStore,
    samples: dict[int, dict[str, Any]],
    make_sampler: Callable[[], Sampler],
    chunk_size: int = 8,
    label: str = "",
    after_chunk: Callable[[list[int]], None] | None = None,
) -> None:
    """Draw the problems of ``rows`` that ``samples`` (the store's records by index) lacks, chunk by chunk: each
    chunk is written to ``store`` and added to ``samples`` before ``after_chunk(chunk)`` runs, with a progress line.
    The sampler (the model) is only built when something is left to sample."""
    to_sample = [i for i in range(len(rows)) if i not in samples]
    if not to_sample:
        return
    sampler = make_sampler()
    start = time.perf_counter()
    for at in range(0, len(to_sample), chunk_size):
        chunk = to_sample[at : at + chunk_size]
        texts = sampler.sample([rows[i]["prompt"] for i in chunk], chunk)
        records = [{"index": i, "completions": t} for i, t in zip(chunk, texts, strict=True)]
        store.append("samples", records)
        samples.update((r["index"], r) for r in records)
        if after_chunk is not None:
            after_chunk(chunk)
        finished = at + len(chunk)
        rate = (time.perf_counter() - start) / finished
        left = rate * (len(to_sample) - finished)
        logger.info(
            "%s: %d/%d problems done (%.2f s/problem, %.0f s left)", label, len(samples), len(rows), rate, left
        )


def policy_metrics(
    model: Any,
    tokenizer: Any,
    rows: Sequence[dict[str, Any]],
    indices: Sequence[int],
    scorer: Scorer,
    settings: SamplingSettings,
    correct_threshold: float = 1.0,
    batch_size: int = 64,
) -> list[dict[str, Any]]:
    """Per-problem metrics of a model in memory (a policy being trained, a warm start) on ``rows[i]`` for i in
    ``indices``: samples drawn as every evaluation draws them (problem i's depend on (seed, i) only), scored, and
    the judge's stats dropped so a trainer's judge/* metrics stay about its training groups."""
    if not indices:
        return []
    texts = TransformersSampler(model, tokenizer, settings, batch_size).sample(
        [rows[i]["prompt"] for i in indices], indices
    )
    scored = scorer.score([rows[i] for i in indices], texts)
    if scorer.judge is not None:
        scorer.judge.pop_stats()
    return [
        problem_metrics(s["rewards"], s["answers"], s["clusters"], correct_threshold, seed=i)
        for i, s in zip(indices, scored, strict=True)
    ]
