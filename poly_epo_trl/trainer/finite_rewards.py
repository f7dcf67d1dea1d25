"""FiniteRewardsGRPOTrainer: TRL's GRPOTrainer, the base of every trainer here (and the Dr.GRPO baseline): rewards
of None, NaN or ±inf are left unscored, a preemption ends in a checkpoint, and a resume is exact."""

from __future__ import annotations

import logging
import shutil
import warnings
from typing import Any

import torch
from trl import GRPOTrainer

from ..files import is_disk_full
from ..judges import JudgeFailing
from .config import PolyEPOSettings
from .engines import save_config_beside_shards
from .preemption import StepAbandoned, preemption_guard
from .resume import (
    CheckpointFailed,
    EpochSampler,
    LastStepEnd,
    checkpoint_folder,
    complete_checkpoints,
    disk_full_message,
    load_resume_state,
    restore_rng,
    save_resume_state,
)
from .vllm_engine import vllm_seams

logger = logging.getLogger(__name__)
# TRL 1.16 reads `model.is_gradient_checkpointing` every step, which transformers 5.23 deprecates: the user cannot act
# on that warning (it is not about their settings), so it is silenced; a recipe using `gradient_checkpointing` warns.
warnings.filterwarnings("ignore", message=r"`is_gradient_checkpointing` is deprecated", category=FutureWarning)


def config_argument(args: tuple, kwargs: dict) -> Any:
    """The ``args=`` a trainer was given (GRPOTrainer's third positional parameter), or None."""
    return kwargs.get("args") if "args" in kwargs else (args[2] if len(args) > 2 else None)


class FiniteRewardsGRPOTrainer(GRPOTrainer):
    """GRPOTrainer that reads a reward of +inf or -inf as "not scored" (like a reward function's None), counts them
    in ``rewards/non_finite`` and warns, instead of letting them turn a group's advantages, then every weight, into
    NaN. Behaves as GRPOTrainer otherwise; ``trainer: grpo`` in recipes runs it. With vLLM, the colocated engine
    takes ``vllm_dtype`` and ``vllm_enforce_eager`` (``PolyEPOSettings``), and a trainer on CPU syncs a server through
    a file (``vllm_engine.vllm_seams``). Its checkpoints resume exactly (``resume``): the sampler's epoch order, the
    generation buffer and the step counters come back."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        config = config_argument(args, kwargs)
        if not hasattr(self, "settings"):  # set by a judged trainer before it gets here
            self.settings = config if isinstance(config, PolyEPOSettings) else PolyEPOSettings()
        with vllm_seams(self, config, self.settings):
            super().__init__(*args, **kwargs)

    def train(self, *args: Any, **kwargs: Any):
        """GRPOTrainer's ``train``. On SIGTERM or SIGINT it saves a checkpoint at the end of the step in progress and
        raises ``preemption.Preempted`` (``preemption_grace_seconds``). When the judge stops training
        (``JudgeFailing``: an outage past ``judge_max_outage_seconds``, too many fallbacks), a checkpoint of the last
        completed step is saved first."""
        last_step = LastStepEnd()
        self.add_callback(last_step)
        try:
            with preemption_guard(self, self.settings.preemption_grace_seconds) as guard:
                self._preemption = guard
                try:
                    output = super().train(*args, **kwargs)
                except StepAbandoned:
                    guard.stopped_at_step, guard.saved = self.state.global_step, self._save_last_step(last_step)
                    raise guard.outcome(abandoned=True) from None
        except JudgeFailing as error:
            saved = self._save_last_step(last_step)
            where = f"Saved {saved} (the last completed step): run the same command to resume." if saved else ""
            raise JudgeFailing(f"{error} {where}".strip()) from error
        finally:
            self._preemption = None
            self.remove_callback(last_step)
        if guard is not None and guard.stopped_at_step is not None and self.state.global_step < self.state.max_steps:
            raise guard.outcome()
        return output

    def _save_last_step(self, last_step: LastStepEnd) -> str | None:
        """A checkpoint of the last completed step, after a failure that stopped the run: the weights, optimizer and
        buffers are as the step left them (a step fails before its update), the random generators as they were at
        its end. None when no step completed; the existing checkpoint when there is one for that step."""
        step = self.state.global_step
        if step == 0:
            return None
        folder = checkpoint_folder(self.args.output_dir, step)
        if folder in complete_checkpoints(self.args.output_dir, self.accelerator.num_processes)[0]:
            return folder
        if last_step.global_step != step:  # no step completed in this run, and its start is not a checkpoint here
            logger.warning("No record of the end of step %d in this run: no checkpoint saved for it.", step)
            return None
        restore_rng(last_step.rng)
        self._save_checkpoint(self.model, trial=None)
        self.accelerator.wait_for_everyone()  # no process exits (and has its launcher stop the others) mid-save
        return folder

    def _get_train_sampler(self, dataset=None):
        return EpochSampler(super()._get_train_sampler(dataset))

    def _save_checkpoint(self, model, trial) -> None:
        """This process's resume state first, then transformers' checkpoint (``trainer_state.json`` last): a
        checkpoint whose files are all there is complete."""
        run_dir = self._get_output_dir(trial=trial)
        folder = checkpoint_folder(run_dir, self.state.global_step)
        try:
            save_resume_state(self, folder, self.accelerator.process_index)
            save_config_beside_shards(self, folder)
            self.accelerator.wait_for_everyone()
            super()._save_checkpoint(model, trial)
        except Exception as error:
            if not is_disk_full(error, run_dir):
                raise
            if self.accelerator.is_main_process:
                shutil.rmtree(folder, ignore_errors=True)
            raise CheckpointFailed(disk_full_message(folder, run_dir, self.accelerator.num_processes)) from error

    def _load_optimizer_and_scheduler(self, checkpoint) -> None:
        super()._load_optimizer_and_scheduler(checkpoint)
        if checkpoint is not None:
            load_resume_state(self, checkpoint, self.accelerator.process_index)

    def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):
        rewards_per_func = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
        infinite = torch.isinf(rewards_per_func)
        count = int(infinite.sum())
        mode = "train" if self.model.training else "eval"
        self._metrics[mode]["rewards/non_finite"].append(count)
        if not count:
            return rewards_per_func
        names = [name for name, bad in zip(self.reward_func_names, infinite.any(dim=0).tolist(), strict=False) if bad]
        if not getattr(self, "_warned_non_finite", False):
            self._warned_non_finite = True
            logger.warning(
                "Reward functions %s returned +inf or -inf for %d completions: they count as not scored (like None); "
                "rewards/non_finite counts them every step. Return a finite number or None.",
                names,
                count,
            )
        return rewards_per_func.masked_fill(infinite, torch.nan)
