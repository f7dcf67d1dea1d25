"""The audit judge: a second judge that re-judges some of the training judge's groups over training, so that a run
sees its judge being gamed while it trains, not after.

Every ``audit_every`` training steps (from the first), the audit judge labels the step's first ``audit_groups``
groups, submitted with the training judge's groups (it runs while TRL computes log-probabilities and rewards) and
through the same pipeline (retries, outage waits, fallbacks said). Its labels are never read by the advantages. What
is logged at each audit (``judge_audit/*``): the mean adjusted Rand index between the two labelings
(``adjusted_rand``), each judge's mean distinct non-degenerate clusters per group (``distinct_train``,
``distinct_audit``), the share of completions both call degenerate or both not (``degenerate_agreement``) and the
seconds the audit judge ran (``seconds``). A group either judge could not label (a fallback) is left out.

A WARNING names both judges when the agreement falls below ``audit_warn_below``, or when the training judge finds
more strategies per group than the audit judge by more than ``audit_distinct_margin`` at two audits in a row; said
when it starts and again every ``WARN_AGAIN`` audits while it lasts. The count of audits in a row is kept in
checkpoints, so a resumed run goes on where it stopped.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from accelerate.utils import gather_object

from ..evaluation.diversity import distinct_per_group
from ..evaluation.metrics import adjusted_rand_index
from ..judges import JudgePipeline, JudgeResult

logger = logging.getLogger(__name__)
WARN_AGAIN = 10  # audits between two warnings of one lasting disagreement
PARTED = "_audits_parted_in_a_row"  # the count of audits in a row whose distinct counts parted, in the state files


def nothing_to_audit(spec: Any, method: str) -> str:
    """The refusal of an audit judge for a method without a training judge (the recipe's door and the trainer's)."""
    return (
        f"audit_judge={spec!r}: the audit judge audits the training judge, and trainer={method!r} has none. Drop "
        "audit_judge, or train with a method that judges (poly_epo, grpo_div, ...)."
    )


class AuditJudging:
    """The audit judge of a run (``pipeline``) beside its training judge (named ``train_judge``), its settings from
    ``settings`` (``audit_*``), handed what it uses: the ``accelerator`` and ``log_metric(mode, name, value)``."""

    def __init__(
        self,
        pipeline: JudgePipeline,
        train_judge: str,
        settings: Any,
        accelerator: Any,
        log_metric: Callable[[str, str, float], None],
    ) -> None:
        self.pipeline, self.train_judge, self.accelerator = pipeline, train_judge, accelerator
        self.log_metric = log_metric
        self.every, self.groups = settings.audit_every, settings.audit_groups
        self.warn_below, self.margin = settings.audit_warn_below, settings.audit_distinct_margin
        self.degenerate = settings.degenerate_cluster_id
        self.parted = 0  # audits in a row at which the training judge's distinct count exceeded the audit's
        self.low = 0  # audits in a row below audit_warn_below (for the warning's repeats)
        self.seconds = 0.0  # the last audit's seconds, the longest of the processes

    def resumable(self) -> dict[str, tuple[Callable[[], Any], Callable[[Any], None]]]:
        def restore(value: Any) -> None:
            self.parted = int(value)

        return {PARTED: (lambda: self.parted, restore)}

    def due(self, mode: str, global_step: int) -> bool:
        """Whether the generation batch for the step after ``global_step`` completed ones is audited."""
        return mode == "train" and global_step % self.every == 0

    def audited(self, owned: list[int]) -> list[int]:
        """The groups of ``owned`` (this process's, by index in the batch) the audit judges."""
        return [g for g in owned if g < self.groups]

    def submit(self, groups: list[tuple[str, list]]) -> Any:
        """The audit of ``groups`` started on the judge loop (a future of one verdict each)."""
        return self.pipeline.submit_groups(groups)

    def join(self, owned: list[int], future: Any) -> dict[int, JudgeResult]:
        """Every process's audit verdicts, by group (a collective); an audit that failed is said and left out: the
        audit never stops training."""
        failure = None
        try:
            results = future.result() if future is not None else []
        except Exception as error:  # the training judge's pipeline decides what stops a run, not the audit's
            results, failure = [], f"{type(error).__name__}: {error}"
        seconds = self.pipeline.pop_stats().get("seconds", 0.0)
        gathered = gather_object([(owned if failure is None else [], results, failure, seconds)])
        for _, _, cause, _ in gathered:
            if cause:
                logger.warning("The audit judge (%s) failed this step: %s. The audit goes on.", self.name, cause)
        self.seconds = max(entry[3] for entry in gathered)
        return {g: result for groups, results, _, _ in gathered for g, result in zip(groups, results, strict=True)}

    @property
    def name(self) -> str:
        return self.pipeline.where()

    def measure(self, cluster_ids: Any, verdicts: list, audits: dict[int, JudgeResult], step: int) -> None:
        """The audit's metrics against the training judge's labels ``cluster_ids`` [G, N] (and its ``verdicts``), as
        of training step ``step``; the warnings."""
        import torch

        both = [
            g
            for g, audit in audits.items()
            if audit.labels is not None
            and audit.fallback is None
            and verdicts[g] is not None
            and verdicts[g].fallback is None
        ]
        self.log_metric("train", "judge_audit/seconds", self.seconds)
        if not both:
            return
        train = [cluster_ids[g].tolist() for g in both]
        audit = [list(audits[g].labels) for g in both]
        agreement = sum(adjusted_rand_index(a, b) for a, b in zip(train, audit, strict=True)) / len(both)
        distinct_train = distinct_per_group(torch.tensor(train), None, self.degenerate).double().mean().item()
        distinct_audit = distinct_per_group(torch.tensor(audit), None, self.degenerate).double().mean().item()
        flags = [
            (x == self.degenerate) == (y == self.degenerate)
            for a, b in zip(train, audit, strict=True)
            for x, y in zip(a, b, strict=True)
        ]
        for name, value in (
            ("adjusted_rand", agreement),
            ("distinct_train", distinct_train),
            ("distinct_audit", distinct_audit),
            ("degenerate_agreement", sum(flags) / len(flags)),
        ):
            self.log_metric("train", f"judge_audit/{name}", value)
        self.warn(agreement, distinct_train, distinct_audit, step)

    def warn(self, agreement: float, distinct_train: float, distinct_audit: float, step: int) -> None:
        """The WARNINGs of a disagreement (see the module), when it starts and every ``WARN_AGAIN`` audits after."""
        self.low = self.low + 1 if agreement < self.warn_below else 0
        self.parted = self.parted + 1 if distinct_train - distinct_audit > self.margin else 0
        both = f"the training judge ({self.train_judge}) and the audit judge ({self.name})"
        if self.low and (self.low - 1) % WARN_AGAIN == 0:
            logger.warning(
                "Step %d: %s agree on the strategies of the audited groups no more than adjusted Rand %.3f, below "
                "audit_warn_below=%g%s. The training judge may be reading the completions differently from what "
                "you meant, or being gamed: read the audited groups in judged_groups.jsonl (their 'audit' labels "
                "beside the training judge's) and see the judges page, 'Is the judge being gamed?'.",
                step,
                both,
                agreement,
                self.warn_below,
                f", {self.low} audits in a row" if self.low > 1 else "",
            )
        if self.parted >= 2 and (self.parted - 2) % WARN_AGAIN == 0:
            logger.warning(
                "Step %d: %s part: the training judge finds %.2f distinct strategies per audited group, the audit "
                "judge %.2f, more by over audit_distinct_margin=%g for %d audits in a row. The policy may be writing "
                "what the training judge counts as new strategies without new strategies: see the judges page, 'Is "
                "the judge being gamed?'.",
                step,
                both,
                distinct_train,
                distinct_audit,
                self.margin,
                self.parted,
            )
