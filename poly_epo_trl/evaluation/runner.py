"""One checkpoint's evaluation: sample what is missing, score what is unscored, compute per-problem metrics."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

from ..text import judge_input
from .episodes import EpisodeSampler
from .report import problem_metrics
from .sampling import Sampler, SamplingSettings, TransformersSampler
from .scoring import Scorer
from .store import SampleStore

logger = logging.getLogger(__name__)


def evaluate_checkpoint(
    rows: Sequence[dict[str, Any]],
    store: SampleStore,
    make_sampler: Callable[[], Sampler | EpisodeSampler],
    scorer: Scorer,
    chunk_size: int = 8,
    correct_reward_threshold: float = 1.0,
    maj_subsets: int = 200,
    label: str = "",
    episodes: bool = False,
) -> list[dict[str, Any]]:
    """Per-problem metrics for ``rows`` (dataset rows with ``prompt``, in index order), chunk by chunk: sample,
    write, score, write. Problems already sampled are not sampled again, nor scored ones scored again, so a killed
    run loses at most one chunk. The sampler (the model) is only built when something is left to sample.
    With ``episodes`` (an agent; ``make_sampler`` gives an EpisodeSampler), each chunk is played, scored while its
    environments are live (their ``get_reward``), and written, trajectories then scores; a problem played but not
    scored when a run was killed is played again: its episodes depend only on (seed, index), so the same ones come
    back."""
    if episodes:
        play_missing(rows, store, make_sampler, scorer, chunk_size, label)
        return checkpoint_metrics(store.read("scores"), len(rows), correct_reward_threshold, maj_subsets)
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
    return checkpoint_metrics(scores, len(rows), correct_reward_threshold, maj_subsets)


def play_missing(
    rows: Sequence[dict[str, Any]],
    store: SampleStore,
    make_sampler: Callable[[], EpisodeSampler],
    scorer: Scorer,
    chunk_size: int,
    label: str,
) -> None:
    """Plays, scores and writes the problems of ``rows`` that ``store`` has no scores for (``evaluate_checkpoint``
    with ``episodes``), chunk by chunk with a progress line."""
    store.read("samples")  # drops a line cut short by a kill
    scores = store.read("scores")
    todo = [i for i in range(len(rows)) if i not in scores]
    if scores:
        logger.info("%s: resuming with %d of %d problems scored", label, len(scores), len(rows))

    def play(sampler: EpisodeSampler, chunk: list[int]) -> None:
        chosen = [rows[i] for i in chunk]
        played = sampler.play(chosen, chunk)
        completions = [episodes for episodes, _ in played]
        records = scorer.score(chosen, completions, [environments for _, environments in played])
        store.append(
            "samples",
            [
                {"index": i, "completions": [judge_input(c) for c in cs]}
                for i, cs in zip(chunk, completions, strict=True)
            ],
        )
        store.append("scores", [{"index": i, **r} for i, r in zip(chunk, records, strict=True)])

    in_chunks(todo, chunk_size, make_sampler, play, label, len(rows), len(scores))


def checkpoint_metrics(
    scores: dict[int, dict[str, Any]], num_problems: int, correct_reward_threshold: float, maj_subsets: int
) -> list[dict[str, Any]]:
    """Per-problem metrics from a store's scores, in index order."""
    return [
        problem_metrics(
            scores[i]["rewards"],
            scores[i]["answers"],
            scores[i]["clusters"],
            correct_reward_threshold=correct_reward_threshold,
            maj_subsets=maj_subsets,
            seed=i,
        )
        for i in range(num_problems)
    ]


def log_progress(label: str, done: int, total: int, start: float, finished: int, to_do: int) -> None:
    """A progress line: ``done`` of ``total`` problems, the pace of the ``finished`` of ``to_do`` this run did."""
    rate = (time.perf_counter() - start) / finished
    logger.info(
        "%s: %d/%d problems done (%.2f s/problem, %.0f s left)", label, done, total, rate, rate * (to_do - finished)
    )


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

    def draw(sampler: Sampler, chunk: list[int]) -> None:
        texts = sampler.sample([rows[i]["prompt"] for i in chunk], chunk)
        records = [{"index": i, "completions": t} for i, t in zip(chunk, texts, strict=True)]
        store.append("samples", records)
        samples.update((r["index"], r) for r in records)
        if after_chunk is not None:
            after_chunk(chunk)

    in_chunks(to_sample, chunk_size, make_sampler, draw, label, len(rows), len(samples))


def in_chunks(
    todo: list[int],
    chunk_size: int,
    make_sampler: Callable[[], Any],
    work: Callable[[Any, list[int]], None],
    label: str,
    total: int,
    done_before: int,
) -> None:
    """``work(sampler, chunk)`` for each chunk of ``todo`` in turn, then a progress line (``done_before`` of
    ``total`` problems were done already); the sampler (the model) is only built when something is left to do."""
    if not todo:
        return
    sampler = make_sampler()
    start = time.perf_counter()
    for at in range(0, len(todo), chunk_size):
        chunk = todo[at : at + chunk_size]
        work(sampler, chunk)
        finished = at + len(chunk)
        log_progress(label, done_before + finished, total, start, finished, len(todo))


def policy_metrics(
    model: Any,
    tokenizer: Any,
    rows: Sequence[dict[str, Any]],
    indices: Sequence[int],
    scorer: Scorer,
    settings: SamplingSettings,
    correct_reward_threshold: float = 1.0,
    batch_size: int = 64,
    sampler: Sampler | None = None,
) -> list[dict[str, Any]]:
    """Per-problem metrics of a model in memory (a policy being trained, a warm start) on ``rows[i]`` for i in
    ``indices``: samples drawn as every evaluation draws them (problem i's depend on (seed, i) only; by ``sampler``,
    else with transformers), scored, and the judge's stats dropped so a trainer's judge/* metrics stay about its
    training groups."""
    if not indices:
        return []
    sampler = sampler or TransformersSampler(model, tokenizer, settings, batch_size)
    texts = sampler.sample([rows[i]["prompt"] for i in indices], indices)
    return _held_out_metrics(scorer, [rows[i] for i in indices], indices, texts, None, correct_reward_threshold)


def episode_metrics(
    sampler: EpisodeSampler,
    rows: Sequence[dict[str, Any]],
    indices: Sequence[int],
    scorer: Scorer,
    correct_reward_threshold: float = 1.0,
) -> list[dict[str, Any]]:
    """``policy_metrics`` for an agent: the episodes of ``rows[i]`` for i in ``indices``, played by ``sampler`` (as
    training plays them), scored with their environments (``get_reward``) and the judge reading the trajectories."""
    if not indices:
        return []
    chosen = [rows[i] for i in indices]
    played = sampler.play(chosen, indices)
    completions, environments = [c for c, _ in played], [e for _, e in played]
    return _held_out_metrics(scorer, chosen, indices, completions, environments, correct_reward_threshold)


def _held_out_metrics(
    scorer: Scorer,
    rows: Sequence[dict[str, Any]],
    indices: Sequence[int],
    completions: Sequence[Sequence[Any]],
    environments: Sequence[Sequence[Any]] | None,
    correct_reward_threshold: float,
) -> list[dict[str, Any]]:
    scored = scorer.score(rows, completions, environments)
    if scorer.judge is not None:
        scorer.judge.pop_stats()
    return [
        problem_metrics(s["rewards"], s["answers"], s["clusters"], correct_reward_threshold, seed=i)
        for i, s in zip(indices, scored, strict=True)
    ]
