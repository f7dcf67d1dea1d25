"""PolyEPOTrainer: TRL's GRPOTrainer whose advantage comes from a registered method (``methods``): by default the
marginal set advantage of judged groups in place of GRPO's.

TRL 1.16 has no advantage hook, so the trainer uses three seams and calls ``super()`` for everything else
(``tests/test_trl_seams.py`` pins them):

1. ``_generate`` returns the decoded completions: there each process's groups go to the judge's event loop in the
   background (``judging.GroupJudging.submit``), so the judge runs while TRL computes log-probs and rewards.
2. ``_calculate_rewards`` returns the rewards gathered over all processes: there the verdicts are joined and the
   method turns them into advantages or a reward bonus (``methods.apply_method``).
3. ``_generate_and_score_completions`` puts each process's slice of the advantages into the output and the
   completions table.

The trainer wires its collaborators and hands each what it uses: the judging (``judging``), the long-run keeper
(``keeper``: preemption, exact resume, full disks) and the method. A step's state lives in one ``step.Step``. The
only change from GRPOTrainer is the advantage: everything else, the loss included, is TRL's.
"""

from __future__ import annotations

import inspect
import logging
import time
import warnings
from pathlib import Path
from typing import Any, ClassVar

import torch
from datasets import Dataset
from torch import nn
from transformers import AutoTokenizer
from transformers.trainer_utils import get_last_checkpoint
from trl import GRPOTrainer

from ..data import far_past_context
from ..environments import agent_tools
from ..judges import JudgePipeline
from ..judges.prompts import describe_tools
from ..methods import Method, MethodResult, Resolved, apply_method, get_method, resolve_settings, shown_settings
from ..methods.floor import RewardFloor
from ..methods.settings import meanings_at_one
from ..models import check_model_settings
from ..rewards.checks import checked_reward
from . import logprobs
from . import step as steps
from .config import (
    BUILTIN_SETTINGS,
    config_values,
    own_settings,
    settings_names,
    settings_owned_elsewhere,
    start_line,
    trainer_config,
)
from .engines import save_config_beside_shards
from .inputs import check_keywords, check_reward_columns, checked_dataset
from .judge_audit import AuditJudging, nothing_to_audit
from .judging import GroupJudging
from .keeper import LongRunKeeper, Resumable
from .logprobs import old_logps_computed
from .resume import identity_mismatch, run_identity, save_identity
from .step import Generated, OnceWarnings, SetBatch, Step, replace_advantages, unscore_infinite
from .verdicts import AuditResume, AuditTrail
from .vllm_engine import vllm_seams

logger = logging.getLogger(__name__)

# TRL 1.16 reads `model.is_gradient_checkpointing` every step, which transformers 5.23 deprecates: the user cannot act
# on that warning (it is not about their settings), so training silences it (nothing global is set at import); a
# recipe using `gradient_checkpointing` still warns.
TRL_DEPRECATION = r"`is_gradient_checkpointing` is deprecated"
# GRPOTrainer's private state that an exact resume saves and restores: the micro-step counter and the generation
# buffer (with steps_per_generation > 1, several steps train on one buffered batch)
TRL_RESUMED = ("_step", "_buffered_inputs")
METHOD_STATE = "method_state"  # a method's state across steps, under this name in the checkpoints' state files
REWARD_FLOOR = "reward_floor"  # the run's reward floor, under this name in the checkpoints' state files


class PolyEPOTrainer(GRPOTrainer):
    """GRPOTrainer whose advantage is the marginal set advantage of the judged groups (the ``poly_epo`` method).

    Takes GRPOTrainer's arguments, with ``args`` any ``GRPOConfig`` (kept as it is; the Poly-EPO settings then come
    as keyword arguments such as ``set_size=4``) or a ``PolyEPOConfig`` (the paper's defaults), plus ``judge=``: a
    ClusteringJudge, any function ``judge(prompt: str, completions: list[str]) -> list[int]``, or a judge spec.
    ``method=`` picks another advantage method: a registered name (``methods.METHODS``), ``package.module:name``,
    or a ``methods.Method``. ``check_judge=False`` sends the judge no probe group; ``check_inputs=False`` leaves the
    training rows and the model's settings unchecked, for rows a door already checked (``poly-epo train``'s).
    """

    method_name: ClassVar[str | None] = None  # the one method a subclass trains with; None: ``method=`` picks it
    default_method: ClassVar[str] = "poly_epo"

    def __init__(
        self,
        *args: Any,
        judge: Any = None,
        method: Any = None,
        audit_judge: Any = None,
        check_judge: bool = True,
        check_inputs: bool = True,
        **kwargs: Any,
    ):
        name = type(self).__name__
        self.method: Method = self.chosen_method(method)
        own = own_settings(self.method)
        check_keywords(name, kwargs, settings_names() | own, settings_owned_elsewhere(self.method), self.method.name)
        values = {key: kwargs.pop(key) for key in settings_names() & set(kwargs)}
        given = {key: kwargs.pop(key) for key in own & set(kwargs)}
        arguments = grpo_arguments(args, kwargs)
        routes: dict[str, str] = {}
        config, self.settings = trainer_config(
            name, self.output_suffix(), arguments, judge, values, self.method, routes
        )
        routes.update({key: f"keyword {key}=" for key in given})
        given = config_values(name, config, own, given)
        routes.update({key: f"{type(config).__name__}.{key}" for key in given if key not in routes})
        self.resolved: Resolved = resolve_settings(
            self.method, {**self.settings.given_settings, **given}, config.num_generations, self.settings, routes
        )
        self.method_settings = self.resolved.settings  # what the method is given
        self.reward_floor = RewardFloor(self.settings.reward_floor)
        self.start_line = start_line(
            name, self.method, self.chosen_settings(method, judge, routes), self.start_notes(config.scale_rewards)
        )
        logger.warning(self.start_line)
        if check_inputs:
            self.check_inputs(arguments)
        pipeline = self.judge_pipeline(judge, arguments, check_judge) if self.method.needs_judge else None
        audit_pipeline = self.audit_pipeline(audit_judge, check_judge)
        self._name = self.method.title
        self._tag_names = ["trl", "grpo", *self.method.tags]
        self._paper = dict(self.method.paper) if self.method.paper else GRPOTrainer._paper
        self.step: Step | None = None  # the generation batch in progress (then the last one)
        self.warnings = OnceWarnings()  # the warnings said once a run
        self.method_state = self.method.state() if self.method.state is not None else None
        self.judging: GroupJudging | None = None
        with vllm_seams(self, config, self.settings):
            super().__init__(**arguments)
        self.reward_funcs = [
            f if isinstance(f, nn.Module) else checked_reward(f, n, self.count_nans)
            for f, n in zip(self.reward_funcs, self.reward_func_names, strict=True)
        ]
        self.nans = 0  # NaN rewards of the batch in progress (rewards/non_finite)
        fraction = self.settings.judge_audit_fraction
        self.audit = AuditTrail(self.args.output_dir, fraction, self.accelerator.is_main_process)
        self.add_callback(AuditResume(self.audit.audit))
        if pipeline is not None:
            auditor = None
            if audit_pipeline is not None:
                train_judge = self.start_line_judge(judge)
                auditor = AuditJudging(audit_pipeline, train_judge, self.settings, self.accelerator, self.log_metric)
            self.judging = GroupJudging(
                pipeline=pipeline,
                settings=self.settings,
                accelerator=self.accelerator,
                audit=self.audit,
                log_metric=self.log_metric,
                log_column=self._log_completion_extra,
                should_abandon=self.should_abandon,
                warnings=self.warnings,
                rollout_tokenizer=self.rollout_tokenizer(),
                auditor=auditor,
            )
        self.keeper = LongRunKeeper(
            accelerator=self.accelerator,
            grace_seconds=self.settings.preemption_grace_seconds,
            state_of=lambda: self.state,
            output_dir_of=self._get_output_dir,
            save_model=self.write_checkpoint,
            resumable=self.resumable_parts(),
            flush=self.audit.flush,
        )
        for callback in self.keeper.callbacks:
            self.add_callback(callback)
        if self.method.kind == "bonus":
            self.add_bonus_column()

    def check_inputs(self, arguments: dict[str, Any]) -> None:
        """GRPOTrainer's ``arguments`` with the training rows checked in place (their prompts; ShareGPT rows
        converted) and the rewards' columns found in them, before anything loads (not where a ``rollout_func`` may
        add the columns a reward reads: TRL passes its extra fields to the rewards). A model named by path has its
        ``model_init_kwargs`` and ``router_aux_loss_coef`` held to its config first (``check_model_settings``)."""
        args = arguments.get("args")
        if isinstance(arguments.get("model"), str) and args is not None:
            init = args.model_init_kwargs if isinstance(args.model_init_kwargs, dict) else {}
            check_model_settings(arguments["model"], None, init, args.router_aux_loss_coef)
        if arguments.get("train_dataset") is None:
            return
        arguments["train_dataset"] = checked_dataset(arguments["train_dataset"])
        dataset, model = arguments["train_dataset"], arguments.get("model")
        if isinstance(model, str) and isinstance(dataset, Dataset) and "prompt" in dataset.column_names:
            given = arguments.get("processing_class")
            far = far_past_context(
                dataset["prompt"], model, None, lambda: given or AutoTokenizer.from_pretrained(model)
            )
            if far:
                raise ValueError(far[0].upper() + far[1:])
        if arguments.get("reward_funcs") is not None and arguments.get("rollout_func") is None:
            check_reward_columns(arguments["reward_funcs"], arguments["train_dataset"])

    def judge_pipeline(self, judge: Any, arguments: dict[str, Any], check: bool) -> JudgePipeline:
        """The judge of the groups, built from ``judge=`` or the settings before the model loads (a spec that names no
        judge, or a judge that is none, stops here). A judge built from a spec string (a service, say) is asked one
        probe group (``check``), as a recipe's is: one that cannot answer stops here, within the recipe's probe
        budget, not steps into training. A judge object or function of the user's own is not called before
        training."""
        if judge is None and self.settings.judge is None:
            raise ValueError(
                f"{type(self).__name__} ({self.method.name}) needs a clustering judge: pass judge=... (a "
                "ClusteringJudge, a function judge(prompt, completions) -> list[int], or a spec such as 'answer') or "
                "set PolyEPOConfig.judge."
            )
        agent = {key: arguments.get(key) for key in ("tools", "environment_factory") if arguments.get(key)}
        tools = describe_tools(agent_tools(agent)) if agent else None  # what the agent could call, as TRL offers it
        pipeline = self.settings.make_judge(judge, tools=tools)
        if check and (judge is None or isinstance(judge, str)):
            try:
                pipeline.check_answers()
            except ValueError as error:
                raise ValueError(
                    f"{error} Fix the judge, or pass check_judge=False to rely on judge_fallback."
                ) from None
        return pipeline

    def audit_pipeline(self, audit_judge: Any, check: bool) -> JudgePipeline | None:
        """The audit judge (``judge_audit``), built as the training judge is (its settings' pipeline: retries,
        outage waits, fallbacks): from ``audit_judge=`` (a spec, a ClusteringJudge or a function) or the settings'
        ``audit_judge``; None without one. Built from a spec, it is asked one probe group (``check``), as the
        training judge is: one that cannot answer stops here, not as failed audits later. ValueError for a method
        without a judge to audit."""
        spec = audit_judge if audit_judge is not None else self.settings.audit_judge
        if spec is None:
            return None
        if not self.method.needs_judge:
            raise ValueError(nothing_to_audit(spec, self.method.name))
        pipeline = self.settings.make_judge(spec)
        if check and isinstance(spec, str):
            try:
                pipeline.check_answers(f"The audit judge (audit_judge={spec!r})")
            except ValueError as error:
                raise ValueError(f"{error} Fix it, drop audit_judge, or pass check_judge=False.") from None
        return pipeline

    def start_line_judge(self, judge: Any) -> str:
        """The training judge as the audit's warnings name it."""
        if judge is not None and not isinstance(judge, (str, JudgePipeline)):
            return getattr(judge, "__name__", None) or getattr(judge, "name", None) or type(judge).__name__
        return str(self.settings.judge if isinstance(judge, JudgePipeline) or judge is None else judge)

    def count_nans(self, count: int) -> None:
        self.nans += count

    def chosen_settings(self, method: Any, judge: Any, routes: dict[str, str]) -> dict[str, tuple[Any, str]]:
        """The method, the judge and the method's sizes that fit the group (``methods.shown_settings``; for a method
        without settings of its own, the run's), each with where it came from (``start_line``)."""
        if self.method_name is not None:
            method_source = f"{type(self).__name__}'s own"
        else:
            method_source = "default" if method is None else "method=, a recipe's trainer:"
        chosen: dict[str, tuple[Any, str]] = {"method": (self.method.name, method_source)}
        if self.method.needs_judge:
            if judge is not None and not (isinstance(judge, JudgePipeline) and isinstance(self.settings.judge, str)):
                name = getattr(judge, "__name__", None) or getattr(judge, "name", None) or type(judge).__name__
                chosen["judge"] = (judge if isinstance(judge, str) else name, routes["judge"])
            else:  # a spec, or the pipeline a recipe's command built from it
                chosen["judge"] = (self.settings.judge, routes["judge"])
        for key in shown_settings(self.method, BUILTIN_SETTINGS):
            if self.method.settings is not None:
                chosen[key] = (getattr(self.method_settings, key), self.resolved.sources[key])
            else:  # a plain function reads the run's settings
                given = key in self.settings.given_settings
                chosen[key] = (
                    getattr(self.settings, key),
                    routes.get(key) if given else self.settings.setting_sources[key],
                )
        return chosen

    @classmethod
    def chosen_method(cls, method: Any) -> Method:
        """The method this trainer trains with: ``method=`` (default ``poly_epo``); a subclass's own
        ``method_name``, which ``method=`` may repeat but not change."""
        if cls.method_name is None:
            return get_method(method if method is not None else cls.default_method)
        own = get_method(cls.method_name)
        if method is not None and get_method(method) is not own:
            raise TypeError(
                f"{cls.__name__} trains with method {cls.method_name!r}, not {getattr(method, 'name', method)!r}: "
                f"use PolyEPOTrainer(..., method={getattr(method, 'name', method)!r})."
            )
        return own

    def output_suffix(self) -> str:
        """The default output folder's suffix (``<model>-<suffix>``, as GRPOTrainer's ``<model>-GRPO``)."""
        label = self.method.title
        return "-".join("".join(c if c.isalnum() else " " for c in label).split())

    def rollout_tokenizer(self) -> Any:
        """The tokenizer a ``rollout_func``'s token ids are read back with (None without a rollout_func)."""
        if self.rollout_func is None:
            return None
        return getattr(self.processing_class, "tokenizer", self.processing_class)

    def resumable_parts(self) -> dict[str, Any]:
        """What a checkpoint keeps beyond transformers' files: TRL's buffer and step counter, the judge's patience,
        the method's state."""
        parts = trl_resumable(self)
        if self.judging is not None:
            parts.update(self.judging.resumable())
            if self.judging.auditor is not None:
                parts.update(self.judging.auditor.resumable())
        if self.method_state is not None:
            parts[METHOD_STATE] = (self.method_state.state_dict, self.method_state.load_state_dict)
        if self.method.reads_floor:
            parts[REWARD_FLOOR] = (self.reward_floor.state_dict, self.reward_floor.load_state_dict)
        return parts

    def add_bonus_column(self) -> None:
        """A bonus method's reward column: TRL's reward lists get one more entry, filled in by ``_calculate_rewards``,
        weighted as the method says."""
        self.reward_funcs.append(_bonus_placeholder)
        self.reward_func_names.append(self.method.column)
        self.reward_processing_classes.append(None)
        weight = torch.tensor([self.method.bonus_weight(self.method_settings)], dtype=self.reward_weights.dtype)
        self.reward_weights = torch.cat([self.reward_weights, weight.to(self.reward_weights.device)])

    def log_metric(self, mode: str, name: str, value: float) -> None:
        """One value of a metric for this step's log (TRL averages them when it logs)."""
        self._metrics[mode][name].append(value)

    def should_abandon(self, judge_down: bool) -> bool:
        """Whether a step waiting for its verdicts is to be dropped (``keeper``: a preemption)."""
        return self.keeper.should_abandon(judge_down)

    @property
    def judge(self) -> Any:
        """The judge of the groups, as given or built (None for a method without one); ``judging.pipeline`` runs
        it with its chain and fallback."""
        return self.judging.pipeline.judge if self.judging else None

    @property
    def last_set_batch(self) -> SetBatch | None:
        """The groups of the last generation batch, with their rewards, clusters and advantages."""
        return self.step.batch if self.step else None

    def train(self, resume_from_checkpoint: Any = None, *args: Any, **kwargs: Any):
        """GRPOTrainer's ``train``, kept going through preemption and judge failures (``keeper``); a checkpoint to
        resume from that another method wrote is refused."""
        checkpoint = resume_from_checkpoint
        if checkpoint is True:
            checkpoint = get_last_checkpoint(self.args.output_dir)
        if isinstance(checkpoint, str) and (mismatch := identity_mismatch(checkpoint, self.identity())):
            raise ValueError(f"{mismatch} Resume with the settings that wrote it, or train in another output_dir.")
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=TRL_DEPRECATION, category=FutureWarning)
            return self.keeper.train(super().train, resume_from_checkpoint, *args, **kwargs)

    def identity(self) -> dict[str, Any]:
        """What this run's checkpoints record of it (``resume.run_identity``)."""
        return run_identity(self.method, self.method_settings, self.settings)

    def _get_train_sampler(self, dataset=None):
        return self.keeper.sampler(super()._get_train_sampler(dataset))

    def _save_checkpoint(self, model, trial) -> None:
        self.keeper.save_checkpoint(trial)

    def write_checkpoint(self, trial: Any, folder: str) -> None:
        """GRPOTrainer's checkpoint into ``folder``, with the model's config beside FSDP weight shards (``keeper``
        calls it, after the resume state)."""
        save_config_beside_shards(self, folder)
        if self.accelerator.is_main_process:
            save_identity(folder, self.identity())
        self.accelerator.wait_for_everyone()
        GRPOTrainer._save_checkpoint(self, self.model, trial)

    def _load_optimizer_and_scheduler(self, checkpoint) -> None:
        super()._load_optimizer_and_scheduler(checkpoint)
        self.keeper.load(checkpoint)

    def _generate(self, prompts: list):
        """Seam 1: as soon as the completions exist, judge this process's groups in the background (``output[3]``:
        the decoded completions; the rest as ``step.Generated`` reads it)."""
        began = time.perf_counter()
        output = super()._generate(prompts)
        self.step = Step(*self.mode_and_group_size())
        self.log_metric(self.step.mode, "time/generation", time.perf_counter() - began)
        generated = Generated.of(output)
        if self.method.reads_logprobs:
            self.step.generated = generated
            self.step.awaiting_old_logps = generated.sampling_logps is None and old_logps_computed(
                self.args.gradient_accumulation_steps, self.args.steps_per_generation, self.num_iterations
            )
        if self.judging is not None:
            self.judging.submit(self.step, prompts, output[3], generated, self.state.global_step)
        return output

    def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):
        """Seam 2: the rewards (±inf as not scored), read to the host once, then the method's advantages or bonus
        from the (judged) groups."""
        mode, group_size = self.mode_and_group_size()
        self.nans = 0
        rewards = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
        rewards, host, infinite = unscore_infinite(rewards, steps.to_host(rewards))
        self.log_metric(mode, "rewards/non_finite", sum(infinite) + self.nans)
        if any(infinite):
            self.warnings.warn(
                "non_finite",
                "Reward functions %s returned +inf or -inf for %d completions: they count as not scored (like None); "
                "rewards/non_finite counts them every step. Return a finite number or None.",
                [name for name, count in zip(self.reward_func_names, infinite, strict=False) if count],
                sum(infinite),
            )
        if self.step is None or self.step.mode != mode or self.step.batch is not None:
            self.step = Step(mode, group_size)  # not started by _generate (called on its own)
        if self.method.kind == "none":  # GRPO's advantage: TRL computes it after this; the trail gets it in seam 3
            if self.audit.fraction > 0:
                texts = steps.gather_texts(prompts, completions)
                degenerate = self.settings.degenerate_cluster_id
                self.step.batch = steps.set_batch(
                    self.step, host, self.reward_weights, *texts, degenerate_cluster_id=degenerate
                )
            return rewards
        columns = host.shape[1] - (self.method.kind == "bonus")  # the bonus column is the method's to fill
        weights = self.reward_weights[:columns]
        if self.judging is not None:
            batch = self.judging.judged_batch(self.step, host[:, :columns], weights, prompts, completions)
        else:
            texts = steps.gather_texts(prompts, completions)
            degenerate = self.settings.degenerate_cluster_id
            batch = steps.set_batch(self.step, host[:, :columns], weights, *texts, degenerate_cluster_id=degenerate)
        batch.correct_reward_threshold = self.settings.correct_reward_threshold
        if self.method.reads_floor:
            self.read_floor(batch)
        if self.method.reads_logprobs:
            self.fill_logprobs(batch)
        began = time.perf_counter()
        result = apply_method(self.method, batch, self.method_settings, self.args.scale_rewards, self.method_state)
        self.log_metric(mode, "time/advantage", time.perf_counter() - began)
        rewards = self.deliver(result, batch, rewards)
        if self.judging is not None:
            self.judging.record_verdicts(batch, len(prompts), self.state.global_step)
        else:
            self.audit.record(batch, self.state.global_step, judged=False)
        return rewards

    def read_floor(self, batch: SetBatch) -> None:
        """The run's reward floor on ``batch`` (``methods.floor``), lowered to the batch's lowest reward where that is
        below it: said as a WARNING the first time, at INFO after; ``rewards/floor`` logs it every step."""
        lowest = self.reward_floor.update(batch.rewards)
        if lowest is not None:
            message = (
                "Rewards below the reward floor: this step's lowest is %g. %s multiplies rewards, so a negative "
                "reward would turn what it multiplies by (for Poly-EPO, each distinct strategy) into a penalty; it "
                "reads r - floor instead, and the floor is now %g (the lowest reward seen; it only moves down, logged "
                "as rewards/floor). Declare your rewards' lowest value (reward_floor: ...) to fix it from the first "
                "step."
            )
            args = (lowest, self.method.title, self.reward_floor.value)
            if "reward_floor" in self.warnings.said:
                logger.info(message, *args)
            else:
                self.warnings.warn("reward_floor", message, *args)
        batch.reward_floor = self.reward_floor.value
        self.log_metric(batch.mode, "rewards/floor", self.reward_floor.value)

    def _get_per_token_logps_and_entropies(self, model, *args, **kwargs):
        """TRL's log-probabilities; the first pass after a generation that TRL makes for its old_per_token_logps is
        kept for the log-prob channel (``trainer.logprobs``), so a method that reads them costs no second pass."""
        result = super()._get_per_token_logps_and_entropies(model, *args, **kwargs)
        if self.step is not None and self.step.awaiting_old_logps and model is self.model:
            self.step.awaiting_old_logps = False
            self.step.old_logps = result[0].detach()
        return result

    def fill_logprobs(self, batch: SetBatch) -> None:
        """``batch.sequence_logprobs`` and ``completion_lengths`` [G, N] for a method that reads them
        (``trainer.logprobs``: vLLM's sampling log-probabilities, else TRL's old_per_token_logps, else one no-grad
        pass), gathered over processes; ``time/logprobs`` is what it cost the step."""
        began = time.perf_counter()
        step, generated = self.step, self.step.generated
        if generated is None:
            raise RuntimeError(
                f"Method {self.method.name!r} reads log-probabilities, but this batch's generation was not seen "
                "(TRL's _generate was not called through the trainer)."
            )
        if generated.sampling_logps is not None:
            sums, lengths = logprobs.from_sampling(
                generated.sampling_logps, generated.completion_ids, generated.env_mask
            )
        else:
            per_token = step.old_logps
            if per_token is None:
                args = self.args
                per_token = logprobs.forward_logprobs(
                    self._get_per_token_logps_and_entropies,
                    self.model,
                    generated.prompt_ids,
                    generated.completion_ids,
                    self._tokenizer.pad_token_id,
                    self.accelerator.device,
                    args.per_device_train_batch_size if step.mode == "train" else args.per_device_eval_batch_size,
                )
            sums, lengths = logprobs.from_per_token(per_token, generated.completion_ids, generated.env_mask)
        local = torch.stack([sums, lengths], dim=1).to(self.accelerator.device)
        both = steps.to_host(self.accelerator.gather(local))
        batch.sequence_logprobs = both[:, 0].reshape(batch.rewards.shape).to(torch.float64)
        batch.completion_lengths = both[:, 1].reshape(batch.rewards.shape).to(torch.float64)
        step.old_logps = None
        self.log_metric(step.mode, "time/logprobs", time.perf_counter() - began)

    def start_notes(self, scale_rewards: Any) -> list[str]:
        """What the start-up line says beside the chosen settings: the reward floor of a method that multiplies
        rewards, a ``scale_rewards`` the method's own normalisation replaces, and what a size of 1 means for the
        method (its field's ``AT_ONE``)."""
        notes = []
        scaling = {True: "group", False: "none"}.get(scale_rewards, scale_rewards)
        if self.method.owns_scaling and scaling != "none":
            notes.append(
                f"{self.method.title} normalises its own advantages, so the run's "
                f"scale_rewards={scaling!r} is not applied on top of them (it would undo the method's weights)"
            )
        if self.method.reads_floor:
            notes.append(
                f"{self.method.title} multiplies rewards: it reads them from the reward floor "
                f"{self.reward_floor.declared:g} (r - floor; a lower reward lowers the floor to it, said in the log; "
                "reward_floor=... declares it)"
            )
        notes += [
            f"{name} 1: {meaning}" for name, meaning in meanings_at_one(self.method, self.method_settings).items()
        ]
        return notes

    def deliver(self, result: MethodResult, batch: SetBatch, rewards: torch.Tensor) -> torch.Tensor:
        """The method's result where TRL reads it: advantages for seam 3, or the bonus column of ``rewards`` (on the
        device, not read); its metrics logged; the batch kept as the step's."""
        for name, value in result.metrics.items():
            self.log_metric(batch.mode, f"{self.method.name}/{name}", value)
        if result.advantages is not None:
            batch.advantages = result.advantages
            self.step.advantages = result.advantages.flatten()
        if result.bonus is not None:
            scored = ~torch.isnan(rewards[:, :-1]).all(dim=1)
            bonus = result.bonus.flatten().to(device=rewards.device, dtype=rewards.dtype)
            rewards[:, -1] = torch.where(scored, bonus, torch.nan)
        self.step.batch = batch
        return rewards

    def _generate_and_score_completions(self, inputs):
        """Seam 3: the method's advantages, where it gave some, in place of GRPO's. ``time/rollout``: the whole
        (generation, log-probabilities, rewards, the judge's wait, the method); TRL's ``step_time`` less it is the
        loss and backward pass."""
        began = time.perf_counter()
        output = super()._generate_and_score_completions(inputs)
        if self.step is not None and self.step.advantages is not None:
            process, logged = self.accelerator.process_index, self._logs["advantages"]
            output = replace_advantages(output, self.step.advantages, process, logged)
            self.step.advantages = None
        elif self.method.kind == "none" and self.step is not None and self.step.batch is not None:
            self.record_grpo_advantages(self.step.batch, output["advantages"])
        self.log_metric(self.mode_and_group_size()[0], "time/rollout", time.perf_counter() - began)
        return output

    def record_grpo_advantages(self, batch: SetBatch, local: torch.Tensor) -> None:
        """Dr.GRPO's groups into the audit trail with the advantages TRL trained on: each process's slice
        (``local``, TRL's output) gathered in process order, the batch's order."""
        if torch.isnan(batch.advantages).all():
            gathered = steps.to_host(self.accelerator.gather(local.detach()))
            batch.advantages = gathered.to(batch.rewards.dtype).view_as(batch.rewards)
            self.audit.record(batch, self.state.global_step, judged=False)

    def mode_and_group_size(self) -> tuple[str, int]:
        """("train", num_generations) while training, ("eval", num_generations_eval) in evaluation."""
        mode = "train" if self.model.training else "eval"
        return mode, self.num_generations if mode == "train" else self.num_generations_eval

    def create_model_card(self, *args: Any, **kwargs: Any) -> None:
        """TRL's model card (the method, its paper and citation), with a section on this run's settings."""
        super().create_model_card(*args, **kwargs)
        card = Path(self.args.output_dir) / "README.md"
        if self.is_world_process_zero() and card.is_file():
            card.write_text(card.read_text().rstrip() + "\n\n" + self.card_section() + "\n")

    def card_section(self) -> str:
        """The model card's account of the run: the method, the judge, the group and set sizes, the GRPO loss, the
        paper."""
        args = self.args
        judge = [self.judging.card_line(args.num_generations)] if self.judging else []
        method = self.method.card_line(self.method_settings)
        paper = self._paper
        return "\n".join(
            [
                f"## {self._name} settings",
                "",
                f"- Method: `{self.method.name}` ({self.method.kind}).",
                f"- At start: {self.start_line}",
                *judge,
                *([method] if method else []),
                f"- GRPO loss: `loss_type={args.loss_type}`, `scale_rewards={args.scale_rewards}`, "
                f"`beta={args.beta}`, clipping {args.epsilon} / {args.epsilon_high}, learning rate "
                f"{args.learning_rate:g}.",
                f"- Paper: [{paper['title']}](https://huggingface.co/papers/{paper['id']}) (arXiv {paper['id']}).",
            ]
        )


def grpo_arguments(args: tuple, kwargs: dict[str, Any]) -> dict[str, Any]:
    """GRPOTrainer's arguments by name, bound once to its signature (what it does not take is a TypeError, as
    GRPOTrainer's own); every later step reads and sets them by name."""
    bound = inspect.signature(GRPOTrainer.__init__).bind(None, *args, **kwargs)
    return {name: value for name, value in bound.arguments.items() if name != "self"}


def trl_resumable(trainer: GRPOTrainer) -> dict[str, Resumable]:
    """GRPOTrainer's own ``TRL_RESUMED`` state as resumable parts; RuntimeError naming the TRL version when this
    TRL lacks one of them (an exact resume would silently not be one)."""
    missing = [name for name in TRL_RESUMED if not hasattr(trainer, name)]
    if missing:
        import trl

        raise RuntimeError(
            f"TRL {trl.__version__}'s GRPOTrainer has no {missing}, which an exact resume saves and restores: "
            "this TRL is not the one poly_epo_trl supports (pip install 'trl>=1.16,<1.17')."
        )
    return {
        name: ((lambda name=name: getattr(trainer, name)), (lambda value, name=name: setattr(trainer, name, value)))
        for name in TRL_RESUMED
    }


class GRPODivTrainer(PolyEPOTrainer):
    """The paper's GRPO+DIV baseline: PolyEPOTrainer with the ``grpo_div`` method, Dr.GRPO on reward + lambda
    (N / |cluster(y)| - 1) / (N - 1)."""

    method_name = "grpo_div"


class DrGRPOTrainer(PolyEPOTrainer):
    """The Dr.GRPO baseline: PolyEPOTrainer with the ``grpo`` method, GRPO's own advantage and no judge; it keeps the
    rest (rewards of ±inf unscored, preemption, exact resume). ``trainer: grpo`` in recipes."""

    method_name = "grpo"


def _bonus_placeholder(prompts: list, **kwargs: Any) -> list[None]:
    """Stands in the reward list for a bonus method's column, which ``deliver`` fills in from the judged groups of
    every process. TRL 1.16 keeps one reward function per column (it zips the functions with their names strictly)
    and calls them on each process's own rows, before the groups are gathered and judged: the column's function can
    only leave it unscored."""
    return [None] * len(prompts)
