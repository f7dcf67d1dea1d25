"""Keeping a long run: a preemption ends in a checkpoint, a judge that stops training leaves one of the last
completed step, a full disk leaves no partial one, and a resume is exact (``resume``: the sampler's epoch order,
and every resumable part the trainer hands over: TRL's generation buffer and step counter, the judge's fallback
patience, a method's state).

``LongRunKeeper`` is handed what it uses, never the trainer: the accelerator, the training state, where a
checkpoint goes, the one function that writes the trainer's checkpoint, the resumable parts, and what to flush before
a save. Every
checkpoint, the ones transformers asks for and the one saved after a failure, goes through ``save_checkpoint``."""

from __future__ import annotations

import logging
import shutil
from collections.abc import Callable, Mapping
from typing import Any

from ..files import is_disk_full
from ..judges import JudgeFailing
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
Resumable = tuple[Callable[[], Any], Callable[[Any], None]]  # (get, set) of one part a checkpoint keeps


class LongRunKeeper:
    """What keeps a run going through preemption, judge failures, full disks and restarts.

    ``accelerator``: the run's processes; ``grace_seconds``: ``preemption_grace_seconds``; ``state_of()``: the
    training state (transformers' ``TrainerState``, replaced when training starts); ``output_dir_of(trial)``: where
    checkpoints go; ``save_model(trial, folder)``: the trainer's own checkpoint into ``folder`` (weights, optimizer,
    ``trainer_state.json`` last); ``resumable``: the parts a checkpoint keeps beyond transformers' files, by name;
    ``flush``: what must be on disk before a checkpoint (the audit trail). ``callbacks`` are the trainer's to add,
    once."""

    def __init__(
        self,
        accelerator: Any,
        grace_seconds: float,
        state_of: Callable[[], Any],
        output_dir_of: Callable[[Any], str],
        save_model: Callable[[Any, str], None],
        resumable: Mapping[str, Resumable],
        flush: Callable[[], None] = lambda: None,
    ) -> None:
        self.accelerator, self.state_of, self.output_dir_of = accelerator, state_of, output_dir_of
        self.save_model = save_model
        self.resumable, self.flush = dict(resumable), flush
        self.last_step = LastStepEnd()
        self.preemption = PreemptionCallback(accelerator, grace_seconds)
        self.callbacks = [self.last_step, self.preemption]

    def should_abandon(self, judge_down: bool) -> bool:
        """Whether a step still waiting for its judge is to be dropped: a preemption signal came while training, and
        the judge is down or half the grace period has gone."""
        return self.preemption.armed and self.preemption.should_abandon(judge_down)

    def train(self, run: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """``run`` (GRPOTrainer's ``train``). On SIGTERM or SIGINT it saves a checkpoint at the end of the step in
        progress and raises ``preemption.Preempted`` (``preemption_grace_seconds``). When the judge stops training
        (``JudgeFailing``: an outage past ``judge_max_outage_seconds``, too many fallbacks), a checkpoint of the last
        completed step is saved first."""
        try:
            with preemption_guard(self.preemption) as guard:
                try:
                    output = run(*args, **kwargs)
                except StepAbandoned:
                    guard.stopped_at_step, guard.saved = self.state_of().global_step, self.save_last_step()
                    raise guard.outcome(abandoned=True) from None
        except JudgeFailing as error:
            saved = self.save_last_step()
            where = f"Saved {saved} (the last completed step): run the same command to resume." if saved else ""
            raise JudgeFailing(f"{error} {where}".strip()) from error
        finally:
            self.flush()  # the audit trail of every step trained is on disk
        state = self.state_of()
        if guard is not None and guard.stopped_at_step is not None and state.global_step < state.max_steps:
            raise guard.outcome()
        return output

    def save_last_step(self) -> str | None:
        """A checkpoint of the last completed step, after a failure that stopped the run: the weights, optimizer and
        buffers are as the step left them (a step fails before its update), the random generators as they were at
        its end. None when no step completed; the existing checkpoint when there is one for that step."""
        step = self.state_of().global_step
        if step == 0:
            return None
        output_dir = self.output_dir_of(None)
        folder = checkpoint_folder(output_dir, step)
        if folder in complete_checkpoints(output_dir, self.accelerator.num_processes)[0]:
            return folder
        if self.last_step.global_step != step:  # no step completed in this run, and its start is not a checkpoint
            logger.warning("No record of the end of step %d in this run: no checkpoint saved for it.", step)
            return None
        restore_rng(self.last_step.rng)
        self.save_checkpoint(trial=None)
        self.accelerator.wait_for_everyone()  # no process exits (and has its launcher stop the others) mid-save
        return folder

    def sampler(self, inner: Any) -> EpochSampler:
        """TRL's sampler, drawing in a resumed epoch the order an uninterrupted run draws."""
        return EpochSampler(inner)

    def save_checkpoint(self, trial: Any) -> None:
        """The one way a checkpoint is written: this process's resume state first, then ``save_model`` (transformers'
        checkpoint, ``trainer_state.json`` last), so a checkpoint whose files are all there is complete. A full disk
        removes the partial folder and raises ``CheckpointFailed`` with what to do."""
        run_dir = self.output_dir_of(trial)
        folder = checkpoint_folder(run_dir, self.state_of().global_step)
        try:
            self.flush()  # the audit trail holds every group this checkpoint saw
            save_resume_state(self.resume_state(), folder, self.accelerator.process_index)
            self.save_model(trial, folder)
        except Exception as error:
            if not is_disk_full(error, run_dir):
                raise
            if self.accelerator.is_main_process:
                shutil.rmtree(folder, ignore_errors=True)
            raise CheckpointFailed(disk_full_message(folder, run_dir, self.accelerator.num_processes)) from error

    def resume_state(self) -> dict[str, Any]:
        """What a checkpoint keeps of this process beyond transformers' files: every resumable part."""
        return {name: get() for name, (get, _) in self.resumable.items()}

    def load(self, checkpoint: str | None) -> None:
        """Restore this process's resumable parts from ``checkpoint`` (after transformers restored its own); a part
        the checkpoint lacks keeps its fresh value."""
        if checkpoint is None:
            return
        state = load_resume_state(checkpoint, self.accelerator.process_index, self.accelerator.device)
        if state is None:
            return
        for name, value in state.items():
            if name in self.resumable:
                self.resumable[name][1](value)
