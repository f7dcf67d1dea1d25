"""Judging a step's groups, across processes: submitted to the judge's event loop as soon as TRL has the
completions (``submit``, from ``_generate``), joined and shared once the rewards exist (``judged_batch``, from
``_calculate_rewards``), and shown: the judge's metrics, the completions table's columns and the audit trail.

Collective operations (gathers) stay on the main thread, in the same order on every process; only the judge's own
work runs in the background. Each group is judged by the process that holds its first row, so a group straddling
two processes is judged once. ``GroupJudging`` is handed what it uses (the accelerator, where to log a metric and a
table column, whether to give up waiting), never the trainer.
"""

from __future__ import annotations

import concurrent.futures
import logging
import time
from collections.abc import Callable
from typing import Any

import torch
from accelerate.utils import gather_object

from ..evaluation.diversity import distinct_per_group, group_diversity_metrics
from ..judges import JudgeFailing, JudgePipeline, JudgeResult, step_metrics
from ..judges.base import distinct_labels
from . import step as steps
from .config import PolyEPOSettings
from .judge_audit import AuditJudging
from .preemption import StepAbandoned
from .rollouts import turns_from_env_mask
from .step import Generated, OnceWarnings, PendingJudge, SetBatch, Step, gather_texts, set_batch
from .verdicts import AuditTrail, judge_columns

logger = logging.getLogger(__name__)
ABANDONED = StepAbandoned.__name__  # how a dropped step reads among the failures gathered from every process
PATIENCE = "_steps_over_fallback_frac"  # the judge's fallback patience, under its name in the state files
ROLLOUT_TRAJECTORY = "trajectory"  # a rollout_func's extra field: each completion's chat messages, for the judge
VERDICT_POLL_SECONDS = 0.5  # how often a step waiting for its verdicts checks for a preemption signal
MISFIT_DEGENERATE_FRAC = 0.5  # a judge marking more of a step's completions degenerate than this may not fit the task
MISFIT_REPEATS = (10, 100, 1000)  # a misfit said at its first step, and again when it has lasted this many in a row


MetricLog = Callable[[str, str, float], None]  # (mode, name, value): one value of a metric for the step's log


class GroupJudging:
    """The judge of a run's groups (``pipeline``, built from ``settings``) and everything around one step of it:
    submit, join, metrics, table columns, the judged groups into the run's ``audit`` trail, and the run's patience
    with fallbacks.

    Handed what it uses: the ``accelerator`` (processes, gathers), ``log_metric(mode, name, value)``,
    ``log_column(name, values)`` (a completions-table column, this process's rows), ``should_abandon(judge_down)``
    (whether a step still waiting for its verdicts is to be dropped: a preemption), and ``rollout_tokenizer``, set
    when a ``rollout_func`` makes the episodes (its token ids are read back into turns)."""

    def __init__(
        self,
        pipeline: JudgePipeline,
        settings: PolyEPOSettings,
        accelerator: Any,
        audit: AuditTrail,
        log_metric: MetricLog,
        log_column: Callable[[str, list], None],
        should_abandon: Callable[[bool], bool],
        warnings: OnceWarnings,
        rollout_tokenizer: Any = None,
        auditor: AuditJudging | None = None,
    ) -> None:
        self.pipeline, self.settings, self.accelerator, self.warnings = pipeline, settings, accelerator, warnings
        self.log_metric, self.log_column, self.should_abandon = log_metric, log_column, should_abandon
        self.rollout_tokenizer = rollout_tokenizer
        self.steps_over_fallback_frac = 0  # resumed with a checkpoint (``resumable``)
        self.misfit_steps = 0  # training steps in a row whose verdicts suggest the judge does not fit the task
        self.audit = audit
        self.auditor = auditor  # the audit judge beside this one, where the run has one

    def resumable(self) -> dict[str, tuple[Callable[[], Any], Callable[[Any], None]]]:
        """What a checkpoint keeps of the judging (the fallback patience), as (get, set) by name."""

        def restore(value: Any) -> None:
            self.steps_over_fallback_frac = int(value)

        return {PATIENCE: (lambda: self.steps_over_fallback_frac, restore)}

    def submit(
        self, step: Step, prompts: list, completions: list, generated: Generated | None = None, global_step: int = 0
    ) -> None:
        """Gather the batch's texts (a collective) and submit the groups this process owns to the judge loop, as
        ``step.pending``, with the audited ones to the audit judge where the step after ``global_step`` is audited;
        ``generated``: what TRL's ``_generate`` returned besides the texts (a ``rollout_func``'s episodes are read
        from it). Nothing for groups of one: there is nothing to compare."""
        if step.group_size < 2:
            return
        if generated is not None and self.rollout_tokenizer is not None:
            completions = self.rollout_turns(completions, generated)
        all_prompts, all_completions = gather_texts(prompts, completions)
        size, rank, local_rows = step.group_size, self.accelerator.process_index, len(completions)
        owned = [g for g in range(len(all_completions) // size) if (g * size) // local_rows == rank]
        groups = [(all_prompts[g * size], all_completions[g * size : (g + 1) * size]) for g in owned]
        try:
            future = self.pipeline.submit_groups(groups)
        except Exception as error:  # surfaces at the join, where every process learns of it together
            future = concurrent.futures.Future()
            future.set_exception(error)
        step.pending = PendingJudge(size, all_prompts, all_completions, owned, future)
        if self.auditor is not None and self.auditor.due(step.mode, global_step):
            audited = self.auditor.audited(owned)
            by_group = dict(zip(owned, groups, strict=True))
            step.pending.audit_owned = audited
            step.pending.audit_future = self.auditor.submit([by_group[g] for g in audited]) if audited else None

    def rollout_turns(self, completions: list, generated: Generated) -> list:
        """What the judge reads of a ``rollout_func``'s episodes: its ``ROLLOUT_TRAJECTORY`` field, one list of chat
        messages per completion, where it gives one; else the turns rebuilt from the token ids and ``env_mask`` TRL
        takes (``rollouts.turns_from_env_mask``); else TRL's decoded text, which has neither roles nor the line
        between the agent's words and the environment's (said once in the logs)."""
        trajectories = generated.extra_fields.get(ROLLOUT_TRAJECTORY)
        if trajectories is None and generated.env_mask is not None:
            return [
                turns_from_env_mask(self.rollout_tokenizer, prompt, ids, mask)
                for prompt, ids, mask in zip(
                    generated.prompt_ids, generated.completion_ids, generated.env_mask, strict=True
                )
            ]
        if trajectories is None:
            self.warnings.warn(
                "flat_rollouts",
                "rollout_func returned neither a %r field nor an env_mask: the judge reads TRL's decoded "
                "completion text, with no roles and tool results mixed into the agent's words. Return an env_mask "
                "(1 on the model's tokens, 0 on the environment's) or one list of chat messages per completion "
                "under %r for the judge to read the turns.",
                ROLLOUT_TRAJECTORY,
                ROLLOUT_TRAJECTORY,
            )
            return completions
        if len(trajectories) != len(completions) or not all(
            isinstance(t, list) and all(isinstance(m, dict) and "role" in m for m in t) for t in trajectories
        ):
            raise ValueError(
                f"rollout_func's {ROLLOUT_TRAJECTORY!r} field: expected one list of chat messages (dicts with a "
                f"'role') per completion, {len(completions)} of them; got {str(trajectories)[:200]}."
            )
        return trajectories

    def judged_batch(
        self, step: Step, rewards: torch.Tensor, weights: torch.Tensor, prompts: list, completions: list
    ) -> SetBatch:
        """The gathered batch as judged groups, on the host (``step.set_batch``): the task columns ``rewards`` (the
        host's copy) weighted by ``weights``, the judge's ids [G, N] and verdicts."""
        audits = None
        if step.group_size > 1:
            if step.pending is None:  # not started by _generate (called on its own): start now
                self.submit(step, prompts, completions)
            cluster_ids, verdicts = self.join(step.pending)
            all_prompts, all_completions = step.pending.prompts, step.pending.completions
            self.log_stats(step.mode, step.pending.waited)
            if step.pending.audit_owned is not None:  # every process alike: the audit's join is a collective
                audits = self.auditor.join(step.pending.audit_owned, step.pending.audit_future)
        else:  # groups of one (num_generations_eval=1): nothing to compare, no judge call, advantage 0
            all_prompts, all_completions = gather_texts(prompts, completions)
            cluster_ids = torch.zeros((len(all_completions), 1), dtype=torch.long)
            verdicts = [None] * len(all_completions)
        degenerate = self.settings.degenerate_cluster_id
        batch = set_batch(step, rewards, weights, all_prompts, all_completions, cluster_ids, verdicts, degenerate)
        batch.audits = audits
        return batch

    def join(self, pending: PendingJudge) -> tuple[torch.Tensor, list[JudgeResult]]:
        """Wait for this process's verdicts and share them (a collective): cluster ids [G, N] and each group's
        verdict. A judge that raised on any process raises the same JudgeFailing on every process, instead of
        leaving the others waiting in a gather."""
        waiting = time.perf_counter()
        local_error = None
        try:
            verdicts, failure = self.await_verdicts(pending.future), None
        except StepAbandoned as error:
            verdicts, failure = [], f"{ABANDONED}: {error}"
        except Exception as error:
            verdicts, failure, local_error = [], f"{type(error).__name__}: {error}", error
            logger.error("The judge failed on process %d", self.accelerator.process_index, exc_info=error)
        pending.waited = time.perf_counter() - waiting
        judged = gather_object([(self.accelerator.process_index, failure, pending.owned, verdicts)])
        failures = [(rank, cause) for rank, cause, _, _ in judged if cause]
        abandoned = [cause for _, cause in failures if cause.startswith(ABANDONED)]
        if abandoned:
            raise StepAbandoned(abandoned[0])
        if failures:
            rank, cause = failures[0]
            raise JudgeFailing(f"{self.pipeline.where()} failed on process {rank}: {cause}") from local_error
        labels: list[list[int] | None] = [None] * (len(pending.completions) // pending.group_size)
        verdicts: list[JudgeResult | None] = [None] * len(labels)
        for _, _, owned, results in judged:
            for g, result in zip(owned, results, strict=True):
                labels[g] = (
                    list(result.labels)
                    if result.labels is not None
                    else distinct_labels(pending.group_size, self.settings.degenerate_cluster_id)
                )
                verdicts[g] = result
        if any(row is None for row in labels):
            raise RuntimeError("Some groups were not judged by any process; the batch layout is not the expected one.")
        return torch.tensor(labels, dtype=torch.long), verdicts

    def await_verdicts(self, future: concurrent.futures.Future) -> list:
        """The judge's verdicts; ``StepAbandoned`` (the judging cancelled) when ``should_abandon`` says so (a
        preemption signal came while the judge is down or slow)."""
        while not concurrent.futures.wait([future], timeout=VERDICT_POLL_SECONDS).done:
            if self.should_abandon(self.pipeline.outage.since is not None):
                future.cancel()
                down = "is down" if self.pipeline.outage.since is not None else "has not answered yet"
                raise StepAbandoned(f"{self.pipeline.where()} {down}")
        return future.result()

    def log_stats(self, mode: str, wait_seconds: float) -> None:
        """Sum the judge's counters over processes, log ``judge/*`` (fallback_frac, invalid_answers, retries,
        latency percentiles, token usage, ``seconds`` the judge ran, ``wait_seconds`` the step waited for it, ...),
        and stop training when too many groups keep falling back."""
        accelerator = self.accelerator
        stats = self.pipeline.pop_stats()
        own_seconds = stats.pop("seconds", 0.0)
        # A process that owned no group has no stats: agree on the names first so every process gathers alike.
        names = sorted(set(gather_object(sorted(stats))))
        counts = torch.tensor([[float(stats.get(name, 0)) for name in names] + [own_seconds, wait_seconds]])
        if accelerator.num_processes > 1:  # a collective on the device, then one read of its result
            counts = steps.to_host(accelerator.gather(counts.to(accelerator.device)))
        totals = counts.view(-1, len(names) + 2)
        summed = {name: totals[:, i].sum().item() for i, name in enumerate(names)}
        latencies = gather_object(self.pipeline.pop_latencies())
        causes = [cause for cause in gather_object([self.pipeline.last_failure]) if cause]
        judge_metrics = step_metrics(summed, latencies)
        for name, value in judge_metrics.items():
            self.log_metric(mode, f"judge/{name}", value)
        self.log_metric(mode, "judge/seconds", totals[:, -2].max().item())
        self.log_metric(mode, "judge/wait_seconds", totals[:, -1].max().item())
        if mode == "train":
            self.check_fallback_frac(judge_metrics["fallback_frac"], causes)

    def check_fallback_frac(self, fallback_frac: float, causes: list[str]) -> None:
        """JudgeFailing after ``judge_fallback_patience`` steps in a row above ``judge_max_fallback_frac``. Every
        process sees the same gathered numbers, so all of them stop together."""
        limit, patience = self.settings.judge_max_fallback_frac, self.settings.judge_fallback_patience
        self.steps_over_fallback_frac = self.steps_over_fallback_frac + 1 if fallback_frac > limit else 0
        if limit < 1 and self.steps_over_fallback_frac >= patience:
            last = causes[-1] if causes else "none recorded"
            raise JudgeFailing(
                f"{self.pipeline.where()} could not judge {fallback_frac:.0%} of the last step's groups, and more "
                f"than judge_max_fallback_frac={limit:g} for {patience} steps in a row (judge_fallback_patience): "
                f"training would run on {self.settings.judge_fallback!r} fallbacks. Last cause: {last}. "
                "Fix the judge and resume from the last checkpoint, or raise judge_max_fallback_frac (1 never stops)."
            )

    def record_verdicts(self, batch: SetBatch, local_rows: int, global_step: int) -> None:
        """The step's diversity metrics (``poly_epo/*``); the judge's columns for this process's rows into TRL's
        completions table (``verdicts.judge_columns``); the batch's judged groups into the audit trail (main
        process, ``judge_audit_fraction``), as of ``global_step`` (the steps completed)."""
        settings = self.settings
        threshold, degenerate = settings.correct_reward_threshold, settings.degenerate_cluster_id
        for name, value in group_diversity_metrics(batch.rewards, batch.cluster_ids, threshold, degenerate).items():
            self.log_metric(batch.mode, f"poly_epo/{name}", value)
        if batch.mode == "train":
            self.check_fit(batch)
        if batch.audits is not None:
            self.auditor.measure(batch.cluster_ids, batch.verdicts, batch.audits, global_step + 1)
        start = self.accelerator.process_index * local_rows
        for name, values in judge_columns(batch, threshold, degenerate).items():
            self.log_column(name, values[start : start + local_rows])
        self.audit.record(batch, global_step, judged=True)

    def check_fit(self, batch: SetBatch) -> None:
        """A WARNING when the judge seems not to fit the task (``judge_misfit``): at the first such training step,
        and again when it has lasted ``MISFIT_REPEATS`` steps in a row."""
        misfit = judge_misfit(batch, self.settings.degenerate_cluster_id)
        self.misfit_steps = self.misfit_steps + 1 if misfit else 0
        if misfit is None or not (self.misfit_steps in MISFIT_REPEATS or "judge_misfit" not in self.warnings.said):
            return
        self.warnings.said.add("judge_misfit")
        lasted = f" (for {self.misfit_steps} training steps in a row)" if self.misfit_steps > 1 else ""
        logger.warning(
            "%s %s%s: the set objective finds no diversity to reward there, and groups with one strategy train on "
            "the reward alone. The judge may not fit this task's completions (or the policy has collapsed onto one "
            "answer). Judges that fit: free text, judge: embedding; equations or expressions, judge: answer:text or "
            "a judge of your own (judge: python:package.module:function). poly_epo/degenerate_frac and "
            "poly_epo/distinct_clusters track it every step.",
            self.pipeline.where().capitalize(),
            misfit,
            lasted,
        )

    def card_line(self, num_generations: int) -> str:
        """The model card's line on the judge."""
        spec = self.settings.judge or type(self.pipeline.judge).__name__
        return (
            f"- Judge: `{spec}` ({self.pipeline.name}), clustering each group of N = {num_generations} completions "
            f"into strategies; fallback `{self.pipeline.fallback}`."
        )


def judge_misfit(batch: SetBatch, degenerate_cluster_id: int) -> str | None:
    """What in a training batch's verdicts says the judge may not fit the task, or None: more than
    ``MISFIT_DEGENERATE_FRAC`` of the completions of the groups a judge answered marked degenerate, or every such
    group (of two or more) in at most one strategy. Groups that fell back are the fallback's, not the judge's."""
    judged = [g for g, v in enumerate(batch.verdicts) if v is not None and v.fallback is None]
    if not judged or batch.group_size < 2:
        return None
    ids = batch.cluster_ids[judged]
    said = []
    degenerate = (ids == degenerate_cluster_id).double().mean().item()
    if degenerate > MISFIT_DEGENERATE_FRAC:
        said.append(f"marked {degenerate:.1%} of this step's completions degenerate (no answer it could read)")
    if bool((distinct_per_group(ids, None, degenerate_cluster_id) <= 1).all()):
        said.append(f"put each of this step's {len(judged)} groups in at most one strategy")
    return " and ".join(said) or None
