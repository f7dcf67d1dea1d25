"""A recipe's run continued where it stopped: the checkpoint ``poly-epo train`` resumes from (the one named, else the
last complete one in ``output_dir``, as open-r1's scripts pick it), each checked before the model loads."""

from __future__ import annotations

import os
import shutil
from typing import Any

from ..recipe import RecipeError
from ..trainer import PolyEPOConfig
from ..trainer.resume import complete_checkpoints, identity_mismatch, incomplete_reason
from .shared import is_main_process


def resume_checkpoint(training_args: PolyEPOConfig, identity: dict[str, Any] | None = None) -> str | bool | None:
    """``resume_from_checkpoint`` when set (RecipeError when it is not there), else the last complete
    ``checkpoint-N`` in ``output_dir`` (as open-r1's scripts do), so a run started again after a crash continues
    where it stopped. Checkpoints left incomplete by a crash while saving are named and, on the main process,
    removed: they can never be resumed from. A checkpoint another method wrote (``identity``: this run's,
    ``trainer.resume.run_identity``) stops the run, on every process alike, before it resumes from it or counts
    it as done."""
    given = training_args.resume_from_checkpoint
    if given is not None:
        check_resume_from(given)
        checkpoint = given
    else:
        checkpoint = last_complete_checkpoint(training_args.output_dir)
    if isinstance(checkpoint, str) and identity is not None and (mismatch := identity_mismatch(checkpoint, identity)):
        raise RecipeError(
            f"{mismatch} Use another output_dir for this run, or set overwrite_output_dir: true to start afresh in "
            f"{training_args.output_dir} (its checkpoints are removed first)."
        )
    return checkpoint


def check_resume_from(given: Any) -> None:
    """RecipeError for a ``resume_from_checkpoint`` that names no checkpoint: no such folder, or a folder whose
    ``trainer_state.json`` (every checkpoint's, written last) is missing or unreadable, naming the checkpoints inside
    it where it holds some (a run's output_dir)."""
    if not isinstance(given, str) or given.lower() in ("true", "false"):
        return
    if not os.path.isdir(given):
        raise RecipeError(f"resume_from_checkpoint={given!r}: no such folder. Name a checkpoint-N folder.")
    reason = incomplete_reason(given, 1)
    if reason is not None:
        inside, _ = complete_checkpoints(given, 1)
        hint = f" It holds {inside[-1]!r}: name that." if inside else " Name a checkpoint-N folder a run saved."
        raise RecipeError(f"resume_from_checkpoint={given!r} is no checkpoint: {reason}.{hint}")


def last_complete_checkpoint(output_dir: str) -> str | None:
    """The last complete ``checkpoint-N`` of ``output_dir`` (incomplete ones named and, on the main process,
    removed), or None."""
    complete, incomplete = complete_checkpoints(output_dir, int(os.environ.get("WORLD_SIZE", "1")))
    for path, reason in incomplete:
        print(f"skipping {path}: incomplete ({reason}), a save that did not finish", flush=True)
        if is_main_process():
            shutil.rmtree(path, ignore_errors=True)
    if not complete:
        return None
    print(f"resuming from {complete[-1]} (the last complete checkpoint in output_dir)", flush=True)
    return complete[-1]
