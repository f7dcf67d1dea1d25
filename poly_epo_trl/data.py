"""Datasets for training and evaluation: load a table (Hub, local file, built-in), format the paper's prompts."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from datasets import Dataset, load_dataset

from .checks import RecipeError, check_field_types
from .constants import BUILTIN_PREFIX
from .files import atomic_write_text
from .models import MODEL_UNSET

MATH_INSTRUCTION = "Please reason step by step, and put your final answer within \\boxed{}."


@dataclass
class DatasetArguments:
    """Where the problems come from and how they become prompts (shared by training and evaluation)."""

    dataset_name: str = field(
        default="builtin:sum_pair",
        metadata={
            "help": "Hub dataset id; a local .json/.jsonl/.csv/.parquet file (one split, or rows tagged by "
            "split_column), a file name with '{split}' (data/{split}.jsonl), or a folder of split files "
            "(train.jsonl, test.jsonl); or 'builtin:sum_pair'."
        },
    )
    dataset_config: str | None = field(default=None, metadata={"help": "Dataset configuration name."})
    split_column: str | None = field(
        default="split",
        metadata={
            "help": "A local file with this column holds several splits: only the rows whose value is the split "
            "asked for are read. A file without it is one split."
        },
    )
    prompt_column: str = field(default="problem", metadata={"help": "Column holding the problem text."})
    answer_column: str | None = field(
        default="answer", metadata={"help": "Column with the reference answer, passed to rewards as `answer`."}
    )
    tests_column: str | None = field(
        default=None, metadata={"help": "Column with unit tests, passed to rewards as `tests` (code reward)."}
    )
    code_setup_column: str | None = field(
        default=None,
        metadata={
            "help": "Column with setup code run before each solution in the sandbox, passed to rewards as "
            "`setup_code` (LeetCodeDataset: 'prompt', its imports and ListNode/TreeNode helpers). Not shown to the "
            "model."
        },
    )
    code_sandbox: str = field(
        default="bwrap",
        metadata={
            "help": "Code reward isolation: 'bwrap' (bubblewrap namespaces, read-only minimal filesystem, no "
            "network) or 'rlimits' (weaker: resource limits only, for machines where bubblewrap cannot run)."
        },
    )
    code_trust_mode: str = field(
        default="strict",
        metadata={
            "help": "'strict': a test whose assertions do not reduce to call + constant scores 0; "
            "'sandbox_asserts': run such tests inside the sandbox and take its word (forgeable)."
        },
    )
    code_timeout_seconds: float = field(default=10.0, metadata={"help": "Wall-clock limit per program."})
    code_memory_mb: int = field(default=1024, metadata={"help": "Memory limit per program (whole program)."})
    instruction: str = field(
        default=MATH_INSTRUCTION, metadata={"help": "Appended to each problem after a blank line ('' for none)."}
    )
    system_prompt: str | None = field(default=None, metadata={"help": "Optional system message."})
    chat_format: bool = field(
        default=True,
        metadata={"help": "Conversational prompts (the tokenizer's chat template is applied); false: plain text."},
    )

    def __post_init__(self) -> None:
        check_field_types(self)
        choices = {"code_sandbox": ("bwrap", "rlimits"), "code_trust_mode": ("strict", "sandbox_asserts")}
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                raise RecipeError(f"{name}={getattr(self, name)!r}: use one of {list(allowed)}.")
        for name in ("code_timeout_seconds", "code_memory_mb"):
            if not getattr(self, name) > 0:
                raise RecipeError(f"{name}={getattr(self, name)!r}: must be positive.")


def load_table(args: DatasetArguments, split: str) -> Dataset:
    """The raw rows of ``split``: a local file (filtered by ``split_column`` when it has one), a ``{split}`` file
    name, a folder of split files, or the Hub. (Built-in tasks, ``builtin:<task>``, are ``tasks.load_rows``'.)"""
    name = args.dataset_name
    if "{split}" in name:
        return load_local_file(args, Path(name.replace("{split}", split)), split)
    path = Path(name).expanduser()
    if local_format(path) is not None:
        return load_local_file(args, path, split)
    if path.is_dir():
        return load_local_folder(path, split, name)
    try:
        return load_dataset(name, args.dataset_config, split=split)
    except Exception as error:
        raise RecipeError(
            f"Could not load dataset {name!r} (split {split!r}): {error}. Check the name and split, that you are "
            "online (or the dataset is cached), or point dataset_name at a local file."
        ) from None


def load_local_file(args: DatasetArguments, path: Path, split: str) -> Dataset:
    """One local file: all its rows, or those of ``split`` when it has the ``split_column``."""
    name = args.dataset_name
    kind = local_format(path)
    if kind is None:
        raise RecipeError(f"dataset_name={name!r}: {str(path)!r} is not a .json/.jsonl/.csv/.parquet file.")
    if not path.is_file():
        raise RecipeError(f"dataset_name={name!r}: no such file {str(path)!r}.")
    if path.stat().st_size == 0:
        raise RecipeError(f"dataset_name={name!r}: the file is empty.")
    try:
        table = load_dataset(kind, data_files=str(path), split="train")
    except Exception as error:
        check_local_rows(path, name)  # read the file again only to name the empty file or the bad row
        cause = error.__cause__ or error
        raise RecipeError(f"dataset_name={name!r} could not be read as {kind}: {cause}") from None
    column = args.split_column
    if not column or column not in table.column_names:
        return table
    tags = table[column]
    keep = [i for i, tag in enumerate(tags) if str(tag) == split]
    if not keep:
        raise RecipeError(
            f"dataset_name={name!r}: no row has {column}={split!r}; its splits are {sorted({str(t) for t in tags})}. "
            "Ask for one of them."
        )
    return table.select(keep)


def load_local_folder(path: Path, split: str, name: str) -> Dataset:
    """A folder of split files named as ``datasets`` expects (``train.jsonl``, ``test.parquet``, ...)."""
    try:
        splits = load_dataset(str(path))
    except Exception as error:
        raise RecipeError(
            f"dataset_name={name!r}: the folder could not be read as split files ({error}). Name its files after "
            "their splits (train.jsonl, test.jsonl)."
        ) from None
    if split not in splits:
        raise RecipeError(f"dataset_name={name!r}: the folder has no split {split!r}; it has {sorted(splits)}.")
    return splits[split]


def problem_fingerprints(table: Dataset, prompt_column: str, max_rows: int | None = None) -> set[str]:
    """Short hashes of the problems (the prompt column's text, stripped): two tables share a problem when they
    share a fingerprint, whatever the instruction or chat format around it."""
    import hashlib

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


def check_model_path(name: str | None, field_name: str = "model_name_or_path") -> None:
    """RecipeError for a model that cannot be found before anything loads: unset, a local path (absolute, ``./``,
    ``~``, or more than one ``/``; a Hub id has one) that does not exist, or a folder with no model in it (a run's
    output_dir before its first save: its ``checkpoint-N`` folders are named)."""
    if not name:
        raise RecipeError(MODEL_UNSET)
    if name.startswith(BUILTIN_PREFIX):
        return
    path = Path(name).expanduser()
    looks_local = name.startswith(("/", ".", "~")) or name.count("/") > 1 or path.is_dir()
    if not looks_local:
        return
    if not path.exists():
        raise RecipeError(f"{field_name}={name!r}: no such directory.")
    if path.is_dir() and not any((path / f).is_file() for f in ("config.json", "adapter_config.json")):
        from transformers.trainer_utils import get_last_checkpoint

        latest = get_last_checkpoint(str(path))
        hint = f" Its latest checkpoint is {latest!r}." if latest else " Has the run saved a model yet?"
        raise RecipeError(f"{field_name}={name!r}: no model in this folder (no config.json).{hint}")


def check_output_dir(path: str) -> None:
    """RecipeError when ``output_dir`` cannot be created: a file stands where a folder is needed."""
    for parent in [Path(path), *Path(path).parents]:
        if parent.exists():
            if not parent.is_dir():
                raise RecipeError(f"output_dir={path!r}: {str(parent)!r} is a file, not a folder.")
            return


def check_local_rows(path: Path, name: str) -> None:
    """RecipeError for an empty file, or a JSON-lines file with a line that is not JSON (its number and why)."""
    import gzip

    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8", errors="replace") as handle:
        lines = [line for line in handle if line.strip()] if ".jsonl" in path.suffixes else None
    if lines == []:
        raise RecipeError(f"dataset_name={name!r}: the file is empty.")
    for number, line in enumerate(lines or [], 1):
        try:
            json.loads(line.strip())
        except ValueError as error:
            raise RecipeError(f"dataset_name={name!r}: row {number} is not JSON ({error}).") from None


def local_format(path: Path) -> str | None:
    """The ``datasets`` builder for a local file (``.json``, ``.jsonl``, ``.csv``, ``.parquet``, also ``.gz``)."""
    suffixes = path.suffixes[-2:] if path.suffix == ".gz" else path.suffixes[-1:]
    kind = suffixes[0][1:] if suffixes else ""
    if kind not in ("json", "jsonl", "csv", "parquet") or (kind == "parquet" and path.suffix == ".gz"):
        return None
    return "json" if kind == "jsonl" else kind


def format_dataset(
    dataset: Dataset, args: DatasetArguments, max_rows: int | None = None, keep: Sequence[str] = ()
) -> Dataset:
    """Rows with ``prompt`` (problem + instruction, as chat messages or text) and ``answer`` / ``tests``, and the
    columns in ``keep`` as they are (what an environment's ``reset`` or a reward reads)."""
    missing = [column for column in keep if column not in dataset.column_names]
    if missing:
        raise RecipeError(f"keep_columns names {missing}, not in the dataset; its columns are {dataset.column_names}.")
    wanted = {"prompt_column": args.prompt_column}
    if args.answer_column:
        wanted["answer_column"] = args.answer_column
    if args.tests_column:
        wanted["tests_column"] = args.tests_column
    if args.code_setup_column:
        wanted["code_setup_column"] = args.code_setup_column
    for option, column in wanted.items():
        if column not in dataset.column_names:
            raise RecipeError(
                f"The dataset has no column {column!r} ({option}); its columns are {dataset.column_names}. "
                f"Set {option} to one of them"
                + (", or null if no reward reads it." if option != "prompt_column" else ".")
            )

    def to_prompt(row: dict[str, Any]) -> dict[str, Any]:
        text = str(row[args.prompt_column]).strip()
        if args.instruction:
            text = f"{text}\n\n{args.instruction}"
        out: dict[str, Any] = {}
        if args.chat_format:
            messages = [{"role": "system", "content": args.system_prompt}] if args.system_prompt else []
            out["prompt"] = [*messages, {"role": "user", "content": text}]
        else:
            out["prompt"] = text
        if args.answer_column:
            gold = row[args.answer_column]
            out["answer"] = None if gold is None else str(gold)  # missing stays missing: not the text "None"
        if args.tests_column:
            out["tests"] = row[args.tests_column]
        if args.code_setup_column:
            out["setup_code"] = row[args.code_setup_column]
        return out

    if max_rows is not None:
        dataset = dataset.select(range(min(max_rows, len(dataset))))
    kept = {"prompt", "answer", "tests", "entry_point", "setup_code", *keep}
    read = {args.prompt_column, args.code_setup_column} - set(keep)
    remove = [c for c in dataset.column_names if c not in kept or c in read]
    return dataset.map(to_prompt, remove_columns=remove)


def drop_long_prompts(dataset: Dataset, tokenizer: Any, max_tokens: int) -> tuple[Dataset, int]:
    """Rows whose prompt is at most ``max_tokens`` tokens as the trainer will feed it (chat prompts through the chat
    template with the generation prompt), and how many were dropped: verl's ``filter_overlong_prompts``."""

    def length(row: dict[str, Any]) -> int:
        prompt = row["prompt"]
        if isinstance(prompt, list):
            text = tokenizer.apply_chat_template(prompt, tokenize=False, add_generation_prompt=True)
            return len(tokenizer(text, add_special_tokens=False)["input_ids"])
        return len(tokenizer(prompt)["input_ids"])

    kept = dataset.filter(lambda row: length(row) <= max_tokens)
    return kept, len(dataset) - len(kept)
