"""Preemption: SIGTERM or SIGINT ends training at a step boundary with a checkpoint, instead of losing the steps
since the last one.

While ``train()`` runs, the first signal only records itself. At the end of the step in progress every process
agrees (a max over processes), so all stop after the same step; transformers then saves a checkpoint there and
``train()`` raises ``Preempted``. A step still waiting for its judge verdicts while the judge is down, or half the
grace period after the signal, is abandoned instead (``StepAbandoned``): nothing of it was applied, and the trainer
saves the last completed step. A watchdog bounds the whole: past ``grace_seconds`` the process exits without the
step (the last complete checkpoint is what a restart resumes from). A second signal exits at once, unless it comes
within ``SAME_STOP_SECONDS`` of the first: under ``accelerate launch`` (torchrun) a scheduler's SIGTERM reaches a
worker twice, from the scheduler (which signals every process of the job) and forwarded by the launcher's agent.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import torch
from transformers import TrainerCallback

from .resume import checkpoint_folder

SIGNALS = (signal.SIGTERM, signal.SIGINT)
SAME_STOP_SECONDS = 1.0


class Preempted(Exception):
    """Training stopped on a signal after saving a checkpoint; ``exit_code`` is 128 + the signal's number."""

    def __init__(self, message: str, signum: int) -> None:
        super().__init__(message)
        self.exit_code = 128 + signum


class StepAbandoned(Exception):
    """A signal came while the step waited for a judge that is down or slow: the step is dropped before its update."""


class PreemptionCallback(TrainerCallback):
    """Turns a recorded signal into "save now and stop" at the next step end, on every process at once (through
    ``accelerator``). Inert until ``arm``: the signals are handled only while training runs."""

    def __init__(self, accelerator: Any, grace_seconds: float) -> None:
        self.accelerator = accelerator
        self.grace_seconds = grace_seconds
        self.armed = False
        self.signum: int | None = None
        self.received_at: float | None = None
        self.stopped_at_step: int | None = None
        self.saved: str | None = None
        self._watchdog: threading.Timer | None = None

    def handle(self, signum: int, frame: Any) -> None:
        name = signal.Signals(signum).name
        if self.signum is not None and time.monotonic() - self.received_at < SAME_STOP_SECONDS:
            return  # the same stop, delivered again (a launcher forwarding what the whole job was sent)
        if self.signum is not None:
            print(f"{name} again: exiting now, without a checkpoint of the step in progress.", file=sys.stderr)
            sys.stderr.flush()
            os._exit(128 + signum)
        self.signum, self.received_at = signum, time.monotonic()
        print(
            f"{name} received: finishing the step in progress, then saving a checkpoint (at most "
            f"{self.grace_seconds:g} s; send it again to exit at once).",
            file=sys.stderr,
            flush=True,
        )
        self._watchdog = threading.Timer(self.grace_seconds, self._give_up, args=(signum,))
        self._watchdog.daemon = True
        self._watchdog.start()

    def _give_up(self, signum: int) -> None:
        print(
            f"preemption: the step in progress and its checkpoint did not finish within preemption_grace_seconds="
            f"{self.grace_seconds:g}: exiting without them; a restart resumes from the last complete checkpoint.",
            file=sys.stderr,
            flush=True,
        )
        os._exit(128 + signum)

    def should_abandon(self, judge_down: bool) -> bool:
        """Whether a step waiting for its judge should be dropped: a signal came, and the judge is down or half the
        grace period has gone."""
        if self.signum is None:
            return False
        return judge_down or time.monotonic() - self.received_at > self.grace_seconds / 2

    def requested(self) -> bool:
        """Whether any process received a signal (a collective when there are several processes)."""
        flag = torch.tensor([0 if self.signum is None else self.signum], device=self.accelerator.device)
        if self.accelerator.num_processes > 1:
            flag = self.accelerator.reduce(flag, reduction="max")
        if self.signum is None and int(flag.item()):
            self.signum = int(flag.item())  # another process was signalled: this one stops with it
            self.received_at = time.monotonic()
        return bool(int(flag.item()))

    def on_step_end(self, args, state, control, **kwargs):
        if self.armed and self.requested():
            control.should_save = True
            control.should_training_stop = True
            self.stopped_at_step = state.global_step
        return control

    def on_save(self, args, state, control, **kwargs):
        if self.stopped_at_step is not None:
            # no process exits before every process has written its part: a launcher (torchrun) that sees one
            # process end terminates the others, which must not happen mid-save
            self.accelerator.wait_for_everyone()
            self.saved = checkpoint_folder(args.output_dir, state.global_step)
            if self._watchdog is not None:
                self._watchdog.cancel()
        return control

    def outcome(self, abandoned: bool = False) -> Preempted:
        name = signal.Signals(self.signum).name
        seconds = time.monotonic() - self.received_at
        dropped = " (the step in progress, still waiting for its judge, was dropped)" if abandoned else ""
        saved = f"saved {self.saved}" if self.saved else "no step completed, nothing to save"
        return Preempted(
            f"stopped by {name} after step {self.stopped_at_step}{dropped}: {saved} {seconds:.1f} s after the "
            "signal. Run the same command to resume from it.",
            self.signum,
        )

    def reset(self) -> None:
        """Forget a signal of an earlier ``train()``."""
        self.signum = self.received_at = self.stopped_at_step = self.saved = None


@contextlib.contextmanager
def preemption_guard(callback: PreemptionCallback) -> Iterator[PreemptionCallback | None]:
    """Within: SIGTERM and SIGINT are recorded by ``callback`` (a trainer's callback), armed (None, and the signals
    left alone, when its ``grace_seconds`` is 0 or this is not the main thread). The handlers are restored and the
    callback disarmed on the way out."""
    if not callback.grace_seconds or threading.current_thread() is not threading.main_thread():
        yield None
        return
    callback.reset()
    previous = {signum: signal.signal(signum, callback.handle) for signum in SIGNALS}
    callback.armed = True
    try:
        yield callback
    finally:
        callback.armed = False
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        if callback._watchdog is not None:
            callback._watchdog.cancel()
