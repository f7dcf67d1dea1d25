"""Keeping a long run: a preemption ends in a checkpoint, a judge that stops training leaves one of the last
completed step, a full disk leaves no partial one, and a resume is exact (``resume``: the sampler's epoch order,
TRL's generation buffer and step counter, the judge's fallback patience)."""

from __future__ import annotations

import logging
import shutil
from collections.abc import Callable
from typing import Any

from ..files import is_disk_full
from ..judges import JudgeFailing
from .engines import save_config_beside_shards
from .preemption import PreemptionCallback, StepAbandoned, preemption_guard
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

logger = logging.getLogger(__name__)
# GRPOTrainer's private state that an exact resume saves and restores: the micro-step counter and the generation
# buffer (with steps_per_generation > 1, several steps train on one buffered batch)
TRL_RESUMED = ("_step", "_buffered_inputs")
PATIENCE = "_steps_over_fallback_frac"  # the judge's fallback patience, under its name in the state files


class LongRunKeeper:
    """What keeps ``trainer``'s run going through preemption, judge failures, full disks and restarts."""

    def __init__(self, trainer: Any, grace_seconds: float) -> None:
        missing = [name for name in TRL_RESUMED if not hasattr(trainer, name)]
        if missing:
            import trl

            raise RuntimeError(
                f"TRL {trl.__version__}'s GRPOTrainer has no {missing}, which an exact resume saves and restores: "
                "this TRL is not the one poly_epo_trl supports (pip install 'trl>=1.16,<1.17')."
            )
        self.trainer, self.grace_seconds = trainer, grace_seconds
        self.preemption: PreemptionCallback | None = None  # while ``train`` runs with signals handled

    def train(self, run: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """``run`` (GRPOTrainer's ``train``). On SIGTERM or SIGINT it saves a checkpoint at the end of the step in
        progress and raises ``preemption.Preempted`` (``preemption_grace_seconds``). When the judge stops training
        (``JudgeFailing``: an outage past ``judge_max_outage_seconds``, too many fallbacks), a checkpoint of the last
        completed step is saved first."""
        trainer, last_step = self.trainer, LastStepEnd()
        trainer.add_callback(last_step)
        try:
            with preemption_guard(trainer, self.grace_seconds) as guard:
                self.preemption = guard
                try:
                    output = run(*args, **kwargs)
                except StepAbandoned:
                    guard.stopped_at_step, guard.saved = trainer.state.global_step, self.save_last_step(last_step)
                    raise guard.outcome(abandoned=True) from None
        except JudgeFailing as error:
            saved = self.save_last_step(last_step)
            where = f"Saved {saved} (the last completed step): run the same command to resume." if saved else ""
            raise JudgeFailing(f"{error} {where}".strip()) from error
        finally:
            self.preemption = None
            trainer.remove_callback(last_step)
            if trainer.judging is not None:
                trainer.judging.flush()  # the audit trail of every step trained is on disk
        if (
            guard is not None
            and guard.stopped_at_step is not None
            and trainer.state.global_step < trainer.state.max_steps
        ):
            raise guard.outcome()
        return output

    def save_last_step(self, last_step: LastStepEnd) -> str | None:
        """A checkpoint of the last completed step, after a failure that stopped the run: the weights, optimizer and
        buffers are as the step left them (a step fails before its update), the random generators as they were at
        its end. None when no step completed; the existing checkpoint when there is one for that step."""
        trainer = self.trainer
        step = trainer.state.global_step
        if step == 0:
            return None
        folder = checkpoint_folder(trainer.args.output_dir, step)
        if folder in complete_checkpoints(trainer.args.output_dir, trainer.accelerator.num_processes)[0]:
            return folder
        if last_step.global_step != step:  # no step completed in this run, and its start is not a checkpoint here
            logger.warning("No record of the end of step %d in this run: no checkpoint saved for it.", step)
            return None
        restore_rng(last_step.rng)
        trainer._save_checkpoint(trainer.model, trial=None)
        trainer.accelerator.wait_for_everyone()  # no process exits (and has its launcher stop the others) mid-save
        return folder

    def sampler(self, inner: Any) -> EpochSampler:
        """TRL's sampler, drawing in an resumed epoch the order an uninterrupted run draws."""
        return EpochSampler(inner)

    def save_checkpoint(self, save: Callable[[], None], trial: Any) -> None:
        """This process's resume state first, then ``save`` (transformers' checkpoint, ``trainer_state.json``
        last): a checkpoint whose files are all there is complete. A full disk removes the partial folder and
        raises ``CheckpointFailed`` with what to do."""
        trainer = self.trainer
        run_dir = trainer._get_output_dir(trial=trial)
        folder = checkpoint_folder(run_dir, trainer.state.global_step)
        try:
            if trainer.judging is not None:
                trainer.judging.flush()  # the audit trail holds every group this checkpoint saw
            save_resume_state(self.resume_state(), folder, trainer.accelerator.process_index)
            save_config_beside_shards(trainer, folder)
            trainer.accelerator.wait_for_everyone()
            save()
        except Exception as error:
            if not is_disk_full(error, run_dir):
                raise
            if trainer.accelerator.is_main_process:
                shutil.rmtree(folder, ignore_errors=True)
            raise CheckpointFailed(disk_full_message(folder, run_dir, trainer.accelerator.num_processes)) from error

    def resume_state(self) -> dict[str, Any]:
        """What a checkpoint keeps of this process beyond transformers' files."""
        state = {name: getattr(self.trainer, name) for name in TRL_RESUMED}
        judging = self.trainer.judging
        if judging is not None:
            state[PATIENCE] = judging.steps_over_fallback_frac
        return state

    def load(self, checkpoint: str | None) -> None:
        """Restore this process's ``resume_state`` from ``checkpoint`` (after transformers restored its own)."""
        if checkpoint is None:
            return
        state = load_resume_state(checkpoint, self.trainer.accelerator.process_index, self.trainer.accelerator.device)
        if state is None:
            return
        patience = state.pop(PATIENCE, None)
        for name, value in state.items():
            setattr(self.trainer, name, value)
        if patience is not None and self.trainer.judging is not None:
            self.trainer.judging.steps_over_fallback_frac = patience
