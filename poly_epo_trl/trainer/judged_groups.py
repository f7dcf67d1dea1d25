"""The judged trainers' common base: TRL's GRPOTrainer whose groups a clustering judge labels, for set advantages
(PolyEPOTrainer) or the diversity bonus (GRPODivTrainer).

TRL 1.16 has no advantage hook, so the trainer uses three seams and calls ``super()`` for everything else:

1. ``_generate`` returns the decoded completions; there the batch's texts are gathered and each process's groups go
   to the judge's event loop in the background, so the judge runs while TRL computes log-probs and rewards. This
   seam exists only for that overlap (``_calculate_rewards`` comes after the log-prob passes); its return layout is
   pinned by ``tests/test_trl_seams.py``.
2. ``_calculate_rewards`` returns the rewards gathered over all processes; there the verdicts are joined and shared,
   and the set advantages of the whole batch are computed.
3. ``_generate_and_score_completions`` swaps each process's slice into the output and the logged completions table.

Collective operations (gathers) stay on the main thread, in the same order on every process; only the judge's own
work runs in the background.
"""

from __future__ import annotations

import concurrent.futures
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from accelerate.utils import gather_object
from trl import GRPOConfig
from trl.trainer.utils import get_config_model_id

from ..evaluation.diversity import group_diversity_metrics
from ..judges import ClusteringJudge, JudgeFailing, JudgeResult, step_metrics
from ..judges.audit import JudgeAudit
from ..judges.prompts import describe_tools
from ..text import judge_input, prompt_text, trajectory_text
from .config import DEFAULT_JUDGE, PolyEPOConfig, PolyEPOSettings, departures_from_paper, settings_names
from .finite_rewards import FiniteRewardsGRPOTrainer, config_argument
from .preemption import StepAbandoned
from .verdicts import AuditResume, audit_records, judge_columns

logger = logging.getLogger(__name__)
ABANDONED = StepAbandoned.__name__  # how a dropped step reads among the failures gathered from every process
ROLLOUT_TRAJECTORY = "trajectory"  # a rollout_func's extra field: each completion's chat messages, for the judge
VERDICT_POLL_SECONDS = 0.5  # how often a step waiting for its verdicts checks for a preemption signal


@dataclass
class SetBatch:
    """What the set advantages of one generation batch were computed from (all processes, [G, N]; texts per row)."""

    rewards: torch.Tensor
    cluster_ids: torch.Tensor
    advantages: torch.Tensor
    mode: str
    prompts: list[str]
    completions: list[str]  # as judges read them by default (``text.trajectory_text``)
    inputs: list[Any]  # as judges take them (``text.judge_input``: strings, or an agent's messages)
    verdicts: list[JudgeResult | None]  # per group; None for groups of one, which are not judged

    @property
    def fallbacks(self) -> list[str | None]:
        """Each group's fallback (None where a judge answered)."""
        return [v.fallback if v is not None else None for v in self.verdicts]


@dataclass
class PendingJudge:
    """Judging under way for one generation batch: the gathered texts, the groups this process owns, their future."""

    mode: str
    group_size: int
    prompts: list[str]
    completions: list[Any]
    owned: list[int]
    future: concurrent.futures.Future
    waited: float = 0.0  # seconds the main thread waited for the verdicts: what the judge cost the step


class _JudgedGroupsTrainer(FiniteRewardsGRPOTrainer):
    """GRPOTrainer that clusters every group of completions with a judge, once per group across processes."""

    default_output_suffix = "Poly-EPO"

    def __init__(self, *args: Any, judge: Any = None, **kwargs: Any) -> None:
        values = {name: kwargs.pop(name) for name in settings_names() & set(kwargs)}
        config = config_argument(args, kwargs)
        if config is None:  # as GRPOTrainer builds GRPOConfig("<model name>-GRPO"), with the default judge
            model = kwargs.get("model", args[0] if args else None)
            name = model if isinstance(model, str) else get_config_model_id(model.config)
            values.setdefault("judge", DEFAULT_JUDGE if judge is None else None)
            config = PolyEPOConfig(f"{name.split('/')[-1]}-{self.default_output_suffix}", **values)
            if len(args) > 2:
                args = (*args[:2], config, *args[3:])
            else:
                kwargs["args"] = config
        elif isinstance(config, PolyEPOConfig):
            if values:
                raise TypeError(
                    f"{type(self).__name__} got {sorted(values)} as keyword arguments and args=PolyEPOConfig(...): "
                    "set them on the PolyEPOConfig (keyword arguments are for a plain GRPOConfig)."
                )
        elif isinstance(config, GRPOConfig):
            values.setdefault("judge", DEFAULT_JUDGE if judge is None else None)
            self.settings = PolyEPOSettings.for_grpo(config, **values)
            departures = departures_from_paper(config)
            if departures:
                logger.warning(
                    "%s with a %s: the run keeps its GRPO settings, and these differ from the paper's: %s. "
                    "PolyEPOConfig has the paper's defaults.",
                    type(self).__name__,
                    type(config).__name__,
                    ", ".join(departures),
                )
        else:
            raise TypeError(
                f"{type(self).__name__} needs args=GRPOConfig(...) (or PolyEPOConfig, with the paper's defaults), got "
                f"{type(config).__name__}."
            )
        if not hasattr(self, "settings"):
            self.settings = config
        if judge is None and self.settings.judge is None:
            raise ValueError(
                f"{type(self).__name__} needs a clustering judge: pass judge=... (a ClusteringJudge, a function "
                "judge(prompt, completions) -> list[int], or a spec such as 'answer') or set PolyEPOConfig.judge."
            )
        self.judge: ClusteringJudge = self.settings.make_judge(judge)
        self._steps_over_fallback_frac = 0
        super().__init__(*args, **kwargs)
        self.last_set_batch: SetBatch | None = None
        self.audit = JudgeAudit(self.args.output_dir)
        self.add_callback(AuditResume(self.audit))
        if self.tools:  # TRL's tools, or the environments' methods: the judge's task names what the agent could call
            self.judge.tell_tools(describe_tools(self.tools))

    def create_model_card(self, *args: Any, **kwargs: Any) -> None:
        """TRL's model card (the method, its paper and citation), with a section on how this run judged and scored
        its groups (``card_section``)."""
        super().create_model_card(*args, **kwargs)
        card = Path(self.args.output_dir) / "README.md"
        if self.is_world_process_zero() and card.is_file():
            card.write_text(card.read_text().rstrip() + "\n\n" + self.card_section() + "\n")

    def card_section(self) -> str:
        """The model card's account of the run's settings: the judge, the group and set sizes, and the GRPO loss."""
        args, settings = self.args, self.settings
        return "\n".join(
            [
                f"## {self._name} settings",
                "",
                f"- Judge: `{settings.judge or type(self.judge).__name__}` ({self.judge.name}), clustering each group "
                f"of N = {args.num_generations} completions into strategies; fallback `{settings.judge_fallback}`.",
                *self.method_lines(),
                f"- GRPO loss: `loss_type={args.loss_type}`, `scale_rewards={args.scale_rewards}`, "
                f"`beta={args.beta}`, clipping {args.epsilon} / {args.epsilon_high}, learning rate "
                f"{args.learning_rate:g}.",
                f"- Paper: [{self._paper['title']}](https://huggingface.co/papers/{self._paper['id']}) "
                f"(arXiv {self._paper['id']}).",
            ]
        )

    def method_lines(self) -> list[str]:
        """What the method does with the judged groups, for the model card."""
        return []

    def _mode_and_group_size(self) -> tuple[str, int]:
        mode = "train" if self.model.training else "eval"
        return mode, self.num_generations if mode == "train" else self.num_generations_eval

    def _generate(self, prompts: list):
        """Seam 1: as soon as the completions exist, start judging this process's groups in the background
        (output[3]: the decoded completions; output[5]: a ``rollout_func``'s extra fields)."""
        output = super()._generate(prompts)
        completions = self._rollout_trajectories(output[3], output[5])
        self._pending_judge = self._start_judging(prompts, completions)
        return output

    def _rollout_trajectories(self, completions: list, extra_fields: dict[str, Any]) -> list:
        """What the judge reads of a ``rollout_func``'s episodes: its ``ROLLOUT_TRAJECTORY`` field, one list of chat
        messages per completion (roles, tool calls, tool results), where it gives one; else TRL's decoded text, which
        has neither roles nor the line between the agent's words and the environment's (said once in the logs)."""
        if self.rollout_func is None:
            return completions
        trajectories = extra_fields.get(ROLLOUT_TRAJECTORY)
        if trajectories is None:
            if not getattr(self, "_warned_flat_rollouts", False):
                self._warned_flat_rollouts = True
                logger.warning(
                    "rollout_func returned no %r field: the judge reads TRL's decoded completion text, with no roles "
                    "and tool results mixed into the agent's words. Return one list of chat messages per completion "
                    "under %r (the agent's turns with their tool_calls, the tool results) for the judge to read the "
                    "trajectories.",
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

    def _gather_texts(self, prompts: list, completions: list) -> tuple[list[str], list[Any]]:
        """The whole batch's problem texts and completions as the judge takes them, on every process (a
        collective): strings, or an agent's chat messages with their tool calls and results (``text.judge_input``);
        each judge reads its own view of them (``ClusteringJudge.view``)."""
        return gather_object([prompt_text(p) for p in prompts]), gather_object([judge_input(c) for c in completions])

    def _start_judging(self, prompts: list, completions: list) -> PendingJudge | None:
        """Gather the batch's texts (a collective, on the main thread) and submit the groups this process owns to the
        judge loop. Each group is judged by the process that holds its first row, so a group straddling two
        processes is judged once. None for groups of one: there is nothing to compare."""
        mode, group_size = self._mode_and_group_size()
        if group_size < 2:
            return None
        all_prompts, all_completions = self._gather_texts(prompts, completions)
        num_groups = len(all_completions) // group_size
        rank, local_rows = self.accelerator.process_index, len(completions)
        owned = [g for g in range(num_groups) if (g * group_size) // local_rows == rank]
        groups = [(all_prompts[g * group_size], all_completions[g * group_size : (g + 1) * group_size]) for g in owned]
        try:
            future = self.judge.submit_groups(groups)
        except Exception as error:  # surfaces at the join, where every process learns of it together
            future = concurrent.futures.Future()
            future.set_exception(error)
        return PendingJudge(mode, group_size, all_prompts, all_completions, owned, future)

    def _finish_judging(self, pending: PendingJudge) -> tuple[torch.Tensor, list[JudgeResult]]:
        """Wait for this process's verdicts and share them (a collective): cluster ids [G, N] and each group's
        verdict. A judge that raised on any process raises the same JudgeFailing on every
        process, instead of leaving the others waiting in a gather."""
        waiting = time.perf_counter()
        local_error = None
        try:
            verdicts, failure = self._await_verdicts(pending.future), None
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
            raise JudgeFailing(f"{self.judge.where()} failed on process {rank}: {cause}") from local_error
        num_groups = len(pending.completions) // pending.group_size
        rows: list[list[int] | None] = [None] * num_groups
        verdicts: list[JudgeResult | None] = [None] * num_groups
        for _, _, owned, results in judged:
            for g, result in zip(owned, results, strict=True):
                rows[g] = list(result.labels) if result.labels is not None else list(range(pending.group_size))
                verdicts[g] = result
        if any(row is None for row in rows):
            raise RuntimeError("Some groups were not judged by any process; the batch layout is not the expected one.")
        return torch.tensor(rows, dtype=torch.long, device=self.accelerator.device), verdicts

    def _await_verdicts(self, future: concurrent.futures.Future) -> list:
        """The judge's verdicts; ``StepAbandoned`` (the judging cancelled) when a preemption signal came while the
        judge is down or slow (``PreemptionCallback.should_abandon``)."""
        while not concurrent.futures.wait([future], timeout=VERDICT_POLL_SECONDS).done:
            guard = getattr(self, "_preemption", None)
            if guard is not None and guard.should_abandon(self.judge.outage.since is not None):
                future.cancel()
                down = "is down" if self.judge.outage.since is not None else "has not answered yet"
                raise StepAbandoned(f"{self.judge.where()} {down}")
        return future.result()

    def _log_judge_stats(self, mode: str, wait_seconds: float) -> None:
        """Sum the judge's counters over processes, log ``judge/*`` (fallback_frac, invalid_answers, retries,
        latency percentiles, token usage, ``seconds`` the judge ran, ``wait_seconds`` the step waited for it, ...),
        and stop training when too many groups keep falling back."""
        stats = self.judge.pop_stats()
        own_seconds = stats.pop("seconds", 0.0)
        # A process that owned no group has no stats: agree on the names first so every process gathers alike.
        names = sorted(set(gather_object(sorted(stats))))
        counts = torch.tensor(
            [float(stats.get(name, 0)) for name in names] + [own_seconds, wait_seconds], device=self.accelerator.device
        )
        totals = self.accelerator.gather(counts.unsqueeze(0)).view(-1, len(names) + 2)
        summed = {name: totals[:, i].sum().item() for i, name in enumerate(names)}
        latencies = gather_object(self.judge.pop_latencies())
        causes = [cause for cause in gather_object([self.judge.last_failure]) if cause]
        metrics = step_metrics(summed, latencies)
        for name, value in metrics.items():
            self._metrics[mode][f"judge/{name}"].append(value)
        self._metrics[mode]["judge/seconds"].append(totals[:, -2].max().item())
        self._metrics[mode]["judge/wait_seconds"].append(totals[:, -1].max().item())
        if mode == "train":
            self._check_fallback_frac(metrics["fallback_frac"], causes)

    def _check_fallback_frac(self, fallback_frac: float, causes: list[str]) -> None:
        """JudgeFailing after ``judge_fallback_patience`` steps in a row above ``judge_max_fallback_frac``. Every
        process sees the same gathered numbers, so all of them stop together."""
        limit, patience = self.settings.judge_max_fallback_frac, self.settings.judge_fallback_patience
        self._steps_over_fallback_frac = self._steps_over_fallback_frac + 1 if fallback_frac > limit else 0
        if limit < 1 and self._steps_over_fallback_frac >= patience:
            last = causes[-1] if causes else "none recorded"
            raise JudgeFailing(
                f"{self.judge.where()} could not judge {fallback_frac:.0%} of the last step's groups, and more than "
                f"judge_max_fallback_frac={limit:g} for {patience} steps in a row (judge_fallback_patience): training "
                f"would run on {self.settings.judge_fallback!r} fallbacks. Last cause: {last}. "
                "Fix the judge and resume from the last checkpoint, or raise judge_max_fallback_frac (1 never stops)."
            )

    def _judged_rewards(self, rewards_per_func: torch.Tensor, prompts: list, completions: list) -> SetBatch:
        """The gathered batch as groups: total reward [G, N] (NaN where no reward function scored the row), the
        judge's ids [G, N] and the texts; advantages are left NaN for the caller to fill in."""
        mode, group_size = self._mode_and_group_size()
        pending, self._pending_judge = getattr(self, "_pending_judge", None), None
        if group_size > 1:
            if pending is None or pending.mode != mode:  # not started by _generate (called on its own): start now
                pending = self._start_judging(prompts, completions)
            cluster_ids, verdicts = self._finish_judging(pending)
            all_prompts, all_completions = pending.prompts, pending.completions
            self._log_judge_stats(mode, pending.waited)
        else:  # groups of one (num_generations_eval=1): nothing to compare, no judge call, advantage 0
            all_prompts, all_completions = self._gather_texts(prompts, completions)
            cluster_ids = torch.zeros((len(all_completions), 1), dtype=torch.long, device=self.accelerator.device)
            verdicts = [None] * len(all_completions)
        # the task columns' weights (GRPO+DIV appends the diversity bonus's weight after them)
        weights = self.reward_weights[: rewards_per_func.shape[1]].to(rewards_per_func.device)
        rewards = (rewards_per_func * weights).nansum(dim=1)
        rewards[torch.isnan(rewards_per_func).all(dim=1)] = torch.nan
        rewards = rewards.view(-1, group_size)
        advantages = torch.full_like(rewards, torch.nan)
        texts = [trajectory_text(c) for c in all_completions]
        return SetBatch(rewards, cluster_ids, advantages, mode, all_prompts, texts, all_completions, verdicts)

    def _show_verdicts(self, batch: SetBatch, local_rows: int) -> None:
        """The judge's columns for this process's rows into TRL's completions table (``verdicts.judge_columns``),
        the batch's judged groups into the audit trail (main process, ``judge_audit_fraction``)."""
        columns = judge_columns(batch, self.settings.correct_reward_threshold, self.settings.degenerate_cluster_id)
        start = self.accelerator.process_index * local_rows
        for name, values in columns.items():
            self._log_completion_extra(name, values[start : start + local_rows])
        if self.accelerator.is_main_process and self.settings.judge_audit_fraction > 0:
            step = self.state.global_step + (batch.mode == "train")
            self.audit.append(audit_records(batch, step, self.settings.judge_audit_fraction))

    def _log_diversity(self, batch: SetBatch) -> None:
        metrics = group_diversity_metrics(
            batch.rewards,
            batch.cluster_ids,
            self.settings.correct_reward_threshold,
            self.settings.degenerate_cluster_id,
        )
        for name, value in metrics.items():
            self._metrics[batch.mode][f"poly_epo/{name}"].append(value)
