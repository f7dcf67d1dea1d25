"""What a run trains on, as fingerprints of its problems: recorded beside its checkpoints, so that held-out problems
can be refused when they are training problems."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from datasets import Dataset

from ..files import atomic_write_text
from ..recipe import RecipeError
from .loading import DatasetArguments
from .prompts import prompt_format


def problem_fingerprints(table: Dataset, args: DatasetArguments, max_rows: int | None = None) -> set[str]:
    """Short hashes of the problems (the prompt column's text, stripped): two tables share a problem when they
    share a fingerprint, whatever the instruction or chat format around it."""
    prompt_column = prompt_format(args, table.column_names).column
    if prompt_column not in table.column_names:
        return set()
    texts = table[prompt_column][: max_rows if max_rows is not None else len(table)]
    return {hashlib.sha256(str(text).strip().encode()).hexdigest()[:16] for text in texts}


TRAINING_PROBLEMS = "training_problems.json"


def save_training_problems(output_dir: str, fingerprints: set[str], dataset_name: str, split: str) -> None:
    """Record what a run trains on, next to its checkpoints, so ``poly-epo eval`` can refuse those rows."""
    folder = Path(output_dir)
    folder.mkdir(parents=True, exist_ok=True)
    record = {"dataset_name": dataset_name, "split": split, "fingerprints": sorted(fingerprints)}
    atomic_write_text(folder / TRAINING_PROBLEMS, json.dumps(record))


def load_training_problems(checkpoint: str) -> dict[str, Any] | None:
    """The record saved by training, from a run's folder or one of its ``checkpoint-N`` folders; None if absent."""
    folder = Path(checkpoint).expanduser()
    for candidate in (folder / TRAINING_PROBLEMS, folder.parent / TRAINING_PROBLEMS):
        if candidate.is_file():
            return json.loads(candidate.read_text())
    return None


def refuse_training_rows(held_out: set[str], trained: set[str], what: str) -> None:
    """RecipeError when held-out problems are also training problems (both entry points' ``eval_on_training_rows``
    lets them through)."""
    shared = held_out & trained
    if shared:
        raise RecipeError(
            f"{what}: {len(shared)} of {len(held_out)} held-out problems are training problems (a single file without "
            "a split column is the same rows for every split). Evaluate on held-out rows (a file per split, a "
            "'{split}' file name, or a split column), or set eval_on_training_rows: true to evaluate on them "
            "anyway."
        )
