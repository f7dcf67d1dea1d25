"""What the judge decided, made visible: the completions table's judge columns and the audit trail's records, both
from one generation batch's ``SetBatch``."""

from __future__ import annotations

import logging
import math
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


def audit_records(batch: SetBatch, step: int, fraction: float) -> list[dict[str, Any]]:
    """The audit trail's records of the judged groups of a batch (``judges.audit``), those ``audited`` at
    ``fraction``. ``step``: the training step the batch was generated for (for an evaluation, the step it
    followed)."""
    records = []
    size = batch.cluster_ids.shape[1]
    for g, verdict in enumerate(batch.verdicts):
        if verdict is None or not audited(batch.mode, step, g, fraction):
            continue
        records.append(
            {
                "step": step,
                "mode": batch.mode,
                "group": g,
                "problem": batch.prompts[g * size],
                "completions": batch.inputs[g * size : (g + 1) * size],
                "rewards": _finite(batch.rewards[g].tolist()),
                "advantages": _finite(batch.advantages[g].tolist()),
                "cluster_ids": batch.cluster_ids[g].tolist(),
                "strategies": verdict.strategies,
                "judge": verdict.judge,
                "fallback": verdict.fallback,
                "cause": verdict.cause,
                "seconds": round(verdict.seconds, 4),
                **({"reply_ignored": verdict.ignored} if verdict.ignored else {}),
            }
        )
    return records


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
