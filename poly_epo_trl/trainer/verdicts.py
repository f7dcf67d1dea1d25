"""What the judge and the method decided, made visible: the completions table's judge columns and the audit trail
(``AuditTrail``: every method's groups, with what the method read, so that anyone can recompute the advantages),
both from one generation batch's ``SetBatch``."""

from __future__ import annotations

import concurrent.futures
import logging
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from transformers import TrainerCallback

from ..evaluation.diversity import correct_clusters
from ..judges.audit import JudgeAudit, audited

if TYPE_CHECKING:
    from .step import SetBatch

logger = logging.getLogger(__name__)

JUDGE_COLUMNS = ("cluster", "strategy", "correct_cluster", "judge", "fallback")
STRATEGY_CHARS = 200  # a strategy description longer than this is cut in the table (the audit keeps it whole)


def judge_columns(batch: SetBatch, correct_reward_threshold: float, degenerate_cluster_id: int) -> dict[str, list]:
    """One value per completion of the batch (row order) for each of ``JUDGE_COLUMNS``: its cluster id, the judge's
    strategy description ("" where it gave none), whether its cluster counts as correct, the judge that answered
    ("" for groups of one, which are not judged), and for a fallback group "<fallback>: <cause>" ("" otherwise)."""
    correct = correct_clusters(batch.rewards, batch.cluster_ids, correct_reward_threshold, degenerate_cluster_id)
    columns: dict[str, list] = {name: [] for name in JUDGE_COLUMNS}
    group_size = batch.cluster_ids.shape[1]
    for g, verdict in enumerate(batch.verdicts):
        strategies = (verdict.strategies if verdict else None) or [None] * group_size
        columns["cluster"] += batch.cluster_ids[g].tolist()
        columns["strategy"] += [(s or "")[:STRATEGY_CHARS] for s in strategies]
        columns["correct_cluster"] += correct[g].tolist()
        columns["judge"] += [verdict.judge if verdict else ""] * group_size
        fell_back = verdict is not None and verdict.fallback is not None
        columns["fallback"] += [f"{verdict.fallback}: {verdict.cause}" if fell_back else ""] * group_size
    return columns


def audit_records(batch: SetBatch, step: int, fraction: float, judged: bool = True) -> list[dict[str, Any]]:
    """The audit trail's records of a batch's groups (``judges.audit``), those ``audited`` at ``fraction``. ``step``:
    the training step the batch was generated for (for an evaluation, the step it followed). ``judged``: the method
    judged the groups (a group without a verdict, of one completion, is left out); a method without a judge has each
    group recorded with ``judge: null``. A group the audit judge labelled is always recorded, with its ``audit``.
    Beside the rewards and clusters, what the method read: the run's reward floor where it is not 0, and each
    completion's sampling log-probability and length where the method read them."""
    records = []
    size = batch.cluster_ids.shape[1]
    audits = batch.audits or {}
    for g, verdict in enumerate(batch.verdicts):
        if (judged and verdict is None) or not (audited(batch.mode, step, g, fraction) or g in audits):
            continue
        rows = slice(g * size, (g + 1) * size)
        record = {
            "step": step,
            "mode": batch.mode,
            "group": g,
            "problem": batch.prompts[g * size],
            "completions": batch.inputs[rows],
            "rewards": _finite(batch.rewards[g].tolist()),
            "advantages": _finite(batch.advantages[g].tolist()),
            "cluster_ids": batch.cluster_ids[g].tolist(),
            "strategies": verdict.strategies if verdict else None,
            "judge": verdict.judge if verdict else None,
            "fallback": verdict.fallback if verdict else None,
            "cause": verdict.cause if verdict else None,
            "seconds": round(verdict.seconds, 4) if verdict else 0.0,
        }
        if verdict is not None and verdict.ignored:
            record["reply_ignored"] = verdict.ignored
        if batch.reward_floor != 0:
            record["reward_floor"] = batch.reward_floor
        if g in audits:  # the audit judge's labels beside the training judge's
            found = audits[g]
            record["audit"] = {
                "judge": found.judge,
                "cluster_ids": found.labels,
                "strategies": found.strategies,
                "fallback": found.fallback,
                "cause": found.cause,
                "seconds": round(found.seconds, 4),
            }
        if batch.sequence_logprobs is not None and batch.completion_lengths is not None:
            record["sequence_logprobs"] = batch.sequence_logprobs[g].tolist()
            record["completion_lengths"] = batch.completion_lengths[g].tolist()
        records.append(record)
    return records


class AuditTrail:
    """A run's audit trail (``judges.audit.JudgeAudit`` in ``output_dir``), ``fraction`` of its groups, written by the
    main process on one thread of its own, in order, off the step's path: ``record`` hands a batch over, ``flush``
    waits for the writes so far (before a checkpoint and at the end of training, so what a checkpoint saw is on disk)
    and raises what one failed with (a full disk)."""

    def __init__(self, output_dir: str | Path, fraction: float, is_main_process: bool) -> None:
        self.audit = JudgeAudit(output_dir)
        self.fraction, self.is_main_process = fraction, is_main_process
        self.writer = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="poly-epo-audit")
        self.written: concurrent.futures.Future | None = None

    def record(self, batch: SetBatch, global_step: int, judged: bool) -> None:
        """The batch's groups into the trail (``audit_records``), as of ``global_step`` (the steps completed); the
        batch is not changed after it is handed over."""
        if not self.is_main_process or self.fraction <= 0:
            return
        step = global_step + (batch.mode == "train")
        self.check_written()
        self.written = self.writer.submit(lambda: self.audit.append(audit_records(batch, step, self.fraction, judged)))

    def check_written(self) -> None:
        """Raise what the last write failed with (a full disk), if it has failed."""
        if self.written is not None and self.written.done():
            self.written.result()

    def flush(self) -> None:
        """Wait for the writes so far, raising what one failed with."""
        if self.written is not None:
            self.written.result()


class AuditResume(TrainerCallback):
    """At the start of training, the audit trail keeps what the checkpoint it resumes from had seen (``JudgeAudit.
    resume_at``); a fresh run starts it anew."""

    def __init__(self, audit: JudgeAudit) -> None:
        self.audit = audit

    def on_train_begin(self, args, state, control, **kwargs) -> None:
        if state.is_world_process_zero and (dropped := self.audit.resume_at(state.global_step)):
            logger.info("%s: dropped %d groups judged after step %d", self.audit.path, dropped, state.global_step)


def _finite(values: list[float]) -> list[float | None]:
    """NaN (unscored, or not computed) as None: JSON has no NaN."""
    return [None if math.isnan(v) else v for v in values]
