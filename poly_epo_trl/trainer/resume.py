"""What a checkpoint needs, beyond what TRL and transformers save, for a resumed run to end with the weights of an
uninterrupted one; and which checkpoint a restart may trust.

transformers restores the weights, the optimizer, the scheduler, every random generator and the data position (it
skips the batches already trained on). Three things are lost without this module:

- TRL's ``RepeatSampler`` draws one permutation per epoch from its own generator, seeded once: a run resumed in
  epoch e would draw epoch 0's order again. ``EpochSampler`` fast-forwards that generator to epoch e.
- With ``steps_per_generation > 1`` (or ``num_iterations > 1``) TRL trains several steps on one buffered generation
  batch, and knows where it is by a micro-step counter: both are saved per process (``resume_state_rank<r>.pt``).
- The trainer's own counters (the judge's fallback patience).

The state files are written before transformers writes the checkpoint, whose ``trainer_state.json`` comes last: a
checkpoint is complete when that file parses, every process's state file is there and, with several processes, every
process's random generators (``rng_state_<r>.pth``; each process writes its own after the last collective step of the
save, so the first process's ``trainer_state.json`` can come before another's) (``complete_checkpoints``).
"""

from __future__ import annotations

import json
import logging
import os
import random
import re
import shutil
import zipfile
from collections.abc import Iterator
from dataclasses import fields
from typing import Any

import numpy as np
import torch
from accelerate.utils import send_to_device
from torch.utils.data import Sampler
from transformers import TrainerCallback
from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR

from .config import method_field_names

logger = logging.getLogger(__name__)

STATE_FILE = "resume_state_rank{rank}.pt"
_CHECKPOINT = re.compile(rf"^{PREFIX_CHECKPOINT_DIR}-(\d+)$")


def checkpoint_folder(output_dir: str, step: int) -> str:
    """Where transformers saves the checkpoint of ``step``."""
    return os.path.join(output_dir, f"{PREFIX_CHECKPOINT_DIR}-{step}")


class EpochSampler(Sampler):
    """TRL's sampler, plus ``set_epoch``: the order of epoch e is the one an uninterrupted run draws in epoch e.

    ``RepeatSampler`` draws ``torch.randperm(n, generator)`` once per epoch from a generator seeded with ``seed``;
    ``set_epoch(e)`` reseeds it and draws e permutations, so the next epoch's draw is the (e+1)-th."""

    def __init__(self, inner: Sampler) -> None:
        self.inner = inner

    def __iter__(self) -> Iterator:
        return iter(self.inner)

    def __len__(self) -> int:
        return len(self.inner)

    def set_epoch(self, epoch: int) -> None:
        generator, seed = getattr(self.inner, "generator", None), getattr(self.inner, "seed", None)
        if not getattr(self.inner, "shuffle", False) or generator is None or seed is None:
            return
        generator.manual_seed(seed)
        for _ in range(epoch):
            torch.randperm(self.inner.num_samples, generator=generator)


def capture_rng() -> dict[str, Any]:
    """Every random generator a checkpoint saves (transformers' ``rng_state.pth``): Python, NumPy, torch, CUDA."""
    return {
        "python": random.getstate(),
        "numpy": np.random.get_state(),
        "cpu": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None,
    }


def restore_rng(state: dict[str, Any]) -> None:
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["cpu"])
    if state["cuda"] is not None:
        torch.cuda.set_rng_state_all(state["cuda"])


class LastStepEnd(TrainerCallback):
    """The random generators as they were at the end of the last completed step (what its checkpoint would hold),
    so a step that fails before its update can still leave an exact checkpoint of the step before it."""

    def __init__(self) -> None:
        self.global_step: int | None = None
        self.rng: dict[str, Any] | None = None

    def on_step_end(self, args, state, control, **kwargs):
        self.global_step, self.rng = state.global_step, capture_rng()
        return control


class CheckpointFailed(Exception):
    """A checkpoint could not be written (a full disk); the partial folder was removed, earlier ones are intact."""


def disk_full_message(folder: str, output_dir: str, world_size: int) -> str:
    complete = complete_checkpoints(output_dir, world_size)[0]
    last = f"{complete[-1]} is the last complete checkpoint" if complete else "there is no earlier checkpoint"
    free = shutil.disk_usage(output_dir).free / 2**20 if os.path.isdir(output_dir) else 0.0
    return (
        f"No space left on the device of output_dir={output_dir!r} ({free:.0f} MiB free) while saving "
        f"{os.path.basename(folder)}: the partial checkpoint was removed and {last}. Free some space (or keep fewer "
        "checkpoints with save_total_limit) and run the same command to resume."
    )


def state_path(checkpoint: str, rank: int) -> str:
    return os.path.join(checkpoint, STATE_FILE.format(rank=rank))


def save_resume_state(state: dict[str, Any], checkpoint: str, rank: int) -> None:
    """Write this process's ``state`` (``keeper.LongRunKeeper.resume_state``) into ``checkpoint`` (created if
    needed), atomically."""
    os.makedirs(checkpoint, exist_ok=True)
    path = state_path(checkpoint, rank)
    partial = f"{path}.partial"
    torch.save(state, partial)
    os.replace(partial, path)


def load_resume_state(checkpoint: str, rank: int, device: Any) -> dict[str, Any] | None:
    """What ``save_resume_state`` wrote, on ``device``; None for a checkpoint written without it (said once)."""
    path = state_path(checkpoint, rank)
    if not os.path.exists(path):
        logger.warning(
            "%s has no %s (written by an older version or another trainer): the generation buffer and the step "
            "counter start afresh, so this run will not match an uninterrupted one exactly.",
            checkpoint,
            os.path.basename(path),
        )
        return None
    state = torch.load(path, map_location="cpu", weights_only=False)  # our own file: tensors, lists, strings
    return {name: send_to_device(value, device) for name, value in state.items()}


def incomplete_reason(checkpoint: str, world_size: int) -> str | None:
    """Why a checkpoint cannot be resumed from (a missing, unreadable or cut-short file), or None when it is
    complete."""
    state_file = os.path.join(checkpoint, "trainer_state.json")
    try:
        with open(state_file) as handle:
            json.load(handle)["global_step"]
    except (OSError, ValueError, KeyError, TypeError) as error:
        return f"trainer_state.json is missing or unreadable ({type(error).__name__})"
    missing = [state_path(checkpoint, r) for r in range(world_size) if not os.path.exists(state_path(checkpoint, r))]
    if missing and any(os.path.exists(state_path(checkpoint, r)) for r in range(world_size)):
        return f"{os.path.basename(missing[0])} is missing"
    rng_files = [os.path.join(checkpoint, f"rng_state_{r}.pth") for r in range(world_size)] if world_size > 1 else []
    if rng_files and os.path.exists(rng_files[0]):  # absent altogether with save_only_model
        for path in rng_files:
            if not zipfile.is_zipfile(path):  # torch.save's archive ends with its directory: a cut file has none
                return f"{os.path.basename(path)} is {'cut short' if os.path.exists(path) else 'missing'}"
    return None


def finished_step(checkpoint: str, max_steps: int) -> int | None:
    """The step of ``checkpoint`` when it ends the run (``max_steps`` when set, else the run's own total from its
    ``trainer_state.json``), else None. transformers, resumed from such a checkpoint, trains one step more."""
    with open(os.path.join(checkpoint, "trainer_state.json")) as handle:
        state = json.load(handle)
    total = max_steps if max_steps > 0 else int(state.get("max_steps", 0))
    return state["global_step"] if 0 < total <= state["global_step"] else None


def complete_checkpoints(output_dir: str, world_size: int) -> tuple[list[str], list[tuple[str, str]]]:
    """The complete ``checkpoint-N`` folders of ``output_dir``, oldest first, and the incomplete ones with why."""
    if not os.path.isdir(output_dir):
        return [], []
    found = sorted(
        (int(match.group(1)), name) for name in os.listdir(output_dir) if (match := _CHECKPOINT.match(name))
    )
    complete, incomplete = [], []
    for _, name in found:
        path = os.path.join(output_dir, name)
        reason = incomplete_reason(path, world_size)
        (complete.append(path) if reason is None else incomplete.append((path, reason)))
    return complete, incomplete


def remove_checkpoints(output_dir: str) -> list[str]:
    """Remove every ``checkpoint-N`` of ``output_dir`` (a run started afresh there); the ones removed."""
    if not os.path.isdir(output_dir):
        return []
    removed = [os.path.join(output_dir, n) for n in sorted(os.listdir(output_dir)) if _CHECKPOINT.match(n)]
    for path in removed:
        shutil.rmtree(path, ignore_errors=True)
    if removed:
        logger.warning("overwrite_output_dir: removed %d checkpoints of %s", len(removed), output_dir)
    return removed


IDENTITY = "run_identity.json"  # which method wrote a checkpoint, beside its state files


def run_identity(method: Any, settings: Any, run: Any) -> dict[str, Any]:
    """What makes a run's checkpoints its own: the method (``trainer``), every one of its settings as resolved
    (``settings``; for a method without settings of its own, the built-in methods' settings of ``run``, the run's
    config, which it reads), and the judge spec where the method uses a judge (None for a judge object)."""
    identity: dict[str, Any] = {"trainer": method.name}
    if method.settings is not None:
        identity.update({f.name: getattr(settings, f.name) for f in fields(settings)})
    else:
        identity.update({name: getattr(run, name) for name in method_field_names()})
    if method.needs_judge:
        identity["judge"] = run.judge if isinstance(run.judge, str) else None
    return json.loads(json.dumps(identity, default=repr))  # as a checkpoint records it


def save_identity(folder: str, identity: dict[str, Any]) -> None:
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, IDENTITY), "w") as handle:
        json.dump(identity, handle)


def identity_mismatch(checkpoint: str, identity: dict[str, Any]) -> str | None:
    """Why ``checkpoint`` is not this run's to resume (or to count as done): the method it records, against
    ``identity``, or None (the same method, or a checkpoint that records none)."""
    try:
        with open(os.path.join(checkpoint, IDENTITY)) as handle:
            recorded = json.load(handle)
    except (OSError, ValueError):
        return None
    differ = {k for k in recorded.keys() & identity.keys() if recorded[k] != identity[k]}  # an older record has fewer
    if not differ:
        return None

    described = ", ".join(f"{k} {recorded[k]!r} there, {identity[k]!r} here" for k in sorted(differ))
    return (
        f"{checkpoint} was written by another run (trainer {recorded.get('trainer')!r}): {described}; resuming would "
        "train one run's weights as another's."
    )
