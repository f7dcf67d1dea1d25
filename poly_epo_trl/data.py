"""Datasets for training and evaluation: load a table (Hub, local file, built-in), format the paper's prompts."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from datasets import Dataset, load_dataset

from .checks import check_field_types

MATH_INSTRUCTION = "Please reason step by step, and put your final answer within \\boxed{}."


class RecipeError(ValueError):
    """A recipe that cannot run; the message says what to change."""


@dataclass
class DatasetArguments:
    """Where the problems come from and how they become prompts (shared by training and evaluation)."""

    dataset_name: str = field(
        default="builtin:sum_pair",
        metadata={"help": "Hub dataset id, a local .json/.jsonl/.csv/.parquet file, or 'builtin:sum_pair'."},
    )
    dataset_config: str | None = field(default=None, metadata={"help": "Dataset configuration name."})
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
    """The raw rows: ``builtin:sum_pair`` (its split ``test`` holds the held-out sums), a local file, or the Hub."""
    name = args.dataset_name
    if name == "builtin:sum_pair":
        from .demo.task import make_prompt
        from .demo.warm_start import HELD_OUT_TOTALS, TRAIN_TOTALS

        totals = HELD_OUT_TOTALS if split == "test" else TRAIN_TOTALS
        return Dataset.from_dict({"problem": [make_prompt(s) for s in totals]})
    path = Path(name)
    kind = local_format(path)
    if kind is not None:
        if not path.is_file():
            raise RecipeError(f"dataset_name={name!r}: no such file.")
        if path.stat().st_size == 0:
            raise RecipeError(f"dataset_name={name!r}: the file is empty.")
        try:
            return load_dataset(kind, data_files=str(path), split="train")
        except Exception as error:
            check_local_rows(path, name)  # read the file again only to name the empty file or the bad row
            cause = error.__cause__ or error
            raise RecipeError(f"dataset_name={name!r} could not be read as {kind}: {cause}") from None
    try:
        return load_dataset(name, args.dataset_config, split=split)
    except Exception as error:
        raise RecipeError(
            f"Could not load dataset {name!r} (split {split!r}): {error}. Check the name and split, that you are "
            "online (or the dataset is cached), or point dataset_name at a local file."
        ) from None


def check_model_path(name: str | None) -> None:
    """RecipeError for a model that cannot be found before anything loads: unset, or a local path (absolute,
    ``./``, ``~``, or more than one ``/``; a Hub id has one) that does not exist."""
    if not name:
        raise RecipeError(MODEL_UNSET)
    if name.startswith("builtin:"):
        return
    looks_local = name.startswith(("/", ".", "~")) or name.count("/") > 1
    if looks_local and not Path(name).expanduser().exists():
        raise RecipeError(f"model_name_or_path={name!r}: no such directory.")


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


def format_dataset(dataset: Dataset, args: DatasetArguments, max_rows: int | None = None) -> Dataset:
    """Rows with ``prompt`` (problem + instruction, as chat messages or text) and ``answer`` / ``tests``."""
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
                f"Set {option} to one of them."
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
    keep = {"prompt", "answer", "tests", "entry_point", "setup_code"}
    read = {args.prompt_column, args.code_setup_column}
    remove = [c for c in dataset.column_names if c not in keep or c in read]
    return dataset.map(to_prompt, remove_columns=remove)


MODEL_UNSET = (
    "model_name_or_path is not set: name the model to train (a Hub id or a local directory), or builtin:demo for "
    "the CPU demo's tiny model."
)


def resolve_model(name: str | None) -> str:
    """``builtin:demo`` (the CPU demo's warm start), ``builtin:smollm2`` (offline SmolLM2-135M-Instruct), or as is."""
    if not name:
        raise RecipeError(MODEL_UNSET)
    if name == "builtin:demo":
        from .demo.warm_start import DEFAULT_ASSET

        return str(DEFAULT_ASSET)
    if name == "builtin:smollm2":
        from .judges import smollm2_path

        return smollm2_path()
    return name
