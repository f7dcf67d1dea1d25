"""Datasets for training and evaluation: load a table (Hub, local file, built-in), format the paper's prompts."""

from __future__ import annotations

import functools
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
    datasets: list[dict[str, Any]] | None = field(
        default=None,
        metadata={
            "help": "A mixture of datasets, as `trl grpo` takes it (TRL's DatasetMixtureConfig): a list of {path, "
            "name, data_dir, data_files, split, columns, fraction}, loaded and mixed by TRL's get_dataset; used "
            "instead of dataset_name. Its rows form the split 'train' (and 'test' with test_split_size)."
        },
    )
    test_split_size: float | None = field(
        default=None,
        metadata={
            "help": "With datasets: hold out this share (or count) of the mixture as the split 'test' (split the "
            "same way on every run, so a resumed run trains on the same rows)."
        },
    )
    streaming: bool = field(
        default=False, metadata={"help": "TRL's mixture streaming: not supported (the rows are read before training)."}
    )
    dataset_streaming: bool = field(
        default=False, metadata={"help": "TRL's dataset streaming: not supported (the rows are read before training)."}
    )
    split_column: str | None = field(
        default="split",
        metadata={
            "help": "A local file with this column holds several splits: only the rows whose value is the split "
            "asked for are read. A file without it is one split."
        },
    )
    prompt_column: str | None = field(
        default=None,
        metadata={
            "help": "Column holding the problem text (default 'problem'). 'prompt' (the default when the table has it "
            "and no 'problem') is TRL's standard format: each prompt, text or conversation, is used as it is, and "
            "every column reaches the rewards, as `trl grpo` does."
        },
    )
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
    instruction: str | None = field(
        default=None,
        metadata={
            "help": "Appended to each problem after a blank line (to the last user message of a conversation); '' "
            "for none. Default: the math instruction for a problem column; none for TRL's 'prompt' column and "
            "conversations."
        },
    )
    system_prompt: str | None = field(
        default=None, metadata={"help": "Optional system message (added to a conversation that has none)."}
    )
    chat_format: bool | None = field(
        default=None,
        metadata={
            "help": "Text prompts as a user message (the tokenizer's chat template is applied); false: plain text. "
            "Default: true for a problem column; as the data is for TRL's 'prompt' column."
        },
    )

    def __post_init__(self) -> None:
        check_field_types(self)
        for name in ("dataset_streaming", "streaming"):
            if getattr(self, name):
                raise RecipeError(
                    f"{name}=true: poly-epo reads the rows before training (the prompt checks, the held-out overlap "
                    f"check, an exact resume's order), so it cannot stream them. Set {name}: false; the rows are "
                    "downloaded and cached once (max_train_samples keeps the first rows only)."
                )
        if self.test_split_size is not None and not self.datasets:
            raise RecipeError("test_split_size splits a datasets mixture: set datasets, or drop test_split_size.")


def load_table(args: DatasetArguments, split: str) -> Dataset:
    """The raw rows of ``split``: a ``datasets`` mixture, a local file (filtered by ``split_column`` when it has
    one), a ``{split}`` file name, a folder of split files, or the Hub. (Built-in tasks, ``builtin:<task>``, are
    ``tasks.load_rows``'.)"""
    if args.datasets:
        splits = load_mixture(json.dumps(args.datasets, sort_keys=True), args.test_split_size)
        if split not in splits:
            raise RecipeError(
                f"The datasets mixture has no split {split!r}: it has {sorted(splits)} (set test_split_size for a "
                "'test' split)."
            )
        return splits[split]
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


MIXTURE_KEYS = ("path", "name", "data_dir", "data_files", "split", "columns", "fraction")


@functools.lru_cache(maxsize=4)
def load_mixture(datasets: str, test_split_size: float | None) -> Any:
    """TRL's ``get_dataset`` of the mixture ``datasets`` (JSON of its list), as a DatasetDict: 'train', and 'test'
    when ``test_split_size`` is set, split with a fixed seed (TRL's own split is random on every call). Read once
    per process."""
    from trl import DatasetMixtureConfig, get_dataset
    from trl.scripts.utils import DatasetConfig

    entries = json.loads(datasets)
    configs = []
    for i, entry in enumerate(entries):
        unknown = sorted(set(entry) - set(MIXTURE_KEYS)) if isinstance(entry, dict) else None
        if unknown is None or unknown or "path" not in entry:
            what = f"unknown keys {unknown}" if unknown else "no path"
            raise RecipeError(f"datasets[{i}]: {what}; each entry takes {list(MIXTURE_KEYS)}, path required.")
        configs.append(DatasetConfig(**entry))
    try:
        mixed = get_dataset(DatasetMixtureConfig(datasets=configs))
    except Exception as error:
        raise RecipeError(f"The datasets mixture could not be loaded: {error}") from None
    if test_split_size is None:
        return mixed
    try:
        return mixed["train"].train_test_split(test_size=test_split_size, seed=0)
    except ValueError as error:
        raise RecipeError(f"test_split_size={test_split_size}: {error}") from None


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


def problem_fingerprints(table: Dataset, args: DatasetArguments, max_rows: int | None = None) -> set[str]:
    """Short hashes of the problems (the prompt column's text, stripped): two tables share a problem when they
    share a fingerprint, whatever the instruction or chat format around it."""
    import hashlib

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


PROBLEM_COLUMN = "problem"  # our format: a problem's text, made into a prompt
TRL_PROMPT_COLUMN = "prompt"  # TRL's standard format: the prompt itself, text or conversation


@dataclass(frozen=True)
class PromptFormat:
    """How a table's rows become prompts: ``column`` read; ``as_is`` (TRL's 'prompt' column): prompts as they are
    and every column kept; ``instruction`` appended ('' none); ``system_prompt`` added; ``chat``: text prompts as
    a user message (True), as text (False), or as the data is (None)."""

    column: str
    as_is: bool
    instruction: str
    system_prompt: str | None
    chat: bool | None


def prompt_format(args: DatasetArguments, columns: Sequence[str]) -> PromptFormat:
    """The recipe's prompt settings resolved against a table's ``columns`` (see the fields' help)."""
    column = args.prompt_column
    if column is None:
        column = (
            TRL_PROMPT_COLUMN if TRL_PROMPT_COLUMN in columns and PROBLEM_COLUMN not in columns else PROBLEM_COLUMN
        )
    as_is = column == TRL_PROMPT_COLUMN
    instruction = args.instruction if args.instruction is not None else ("" if as_is else MATH_INSTRUCTION)
    chat = args.chat_format if args.chat_format is not None or as_is else True
    return PromptFormat(column, as_is, instruction, args.system_prompt, chat)


def is_conversation(value: Any) -> bool:
    """Whether a prompt is a conversation: a list of messages with a role."""
    return isinstance(value, list) and bool(value) and all(isinstance(m, dict) and "role" in m for m in value)


def make_prompt(value: Any, fmt: PromptFormat) -> str | list[dict[str, Any]]:
    """One row's prompt: a conversation stays a conversation (the instruction appended to its last user message,
    the system prompt added when it has none); text gets the instruction after a blank line and, with ``chat``,
    becomes a user message after the system prompt."""
    if is_conversation(value):
        messages = [dict(message) for message in value]
        if fmt.instruction:
            last = max((i for i, m in enumerate(messages) if m["role"] == "user"), default=None)
            if last is None:
                raise RecipeError(f"A conversational prompt has no user message to append the instruction to: {value}")
            messages[last]["content"] = f"{messages[last]['content']}\n\n{fmt.instruction}"
        if fmt.system_prompt and messages[0]["role"] != "system":
            messages.insert(0, {"role": "system", "content": fmt.system_prompt})
        return messages
    text = str(value) if fmt.as_is else str(value).strip()
    if fmt.instruction:
        text = f"{text}\n\n{fmt.instruction}"
    if not fmt.chat:
        return text
    system = [{"role": "system", "content": fmt.system_prompt}] if fmt.system_prompt else []
    return [*system, {"role": "user", "content": text}]


def conversational(dataset: Dataset, args: DatasetArguments) -> bool:
    """Whether the rows' prompts will be conversations (what agents need)."""
    fmt = prompt_format(args, dataset.column_names)
    if fmt.chat is not None:
        return fmt.chat
    return bool(len(dataset)) and fmt.column in dataset.column_names and is_conversation(dataset[0][fmt.column])


def format_dataset(
    dataset: Dataset, args: DatasetArguments, max_rows: int | None = None, keep: Sequence[str] = ()
) -> Dataset:
    """Rows with ``prompt`` (``make_prompt`` of the prompt column, as ``prompt_format`` resolves the recipe) and
    ``answer`` / ``tests`` / ``setup_code`` from their columns, and the columns in ``keep`` as they are (what an
    environment's ``reset`` or a reward reads). In TRL's format (``as_is``) every column is kept, as TRL keeps it."""
    fmt = prompt_format(args, dataset.column_names)
    missing = [column for column in keep if column not in dataset.column_names]
    if missing:
        raise RecipeError(f"keep_columns names {missing}, not in the dataset; its columns are {dataset.column_names}.")
    wanted = {"prompt_column": (fmt.column, "prompt")}
    for option, target in (
        ("answer_column", "answer"),
        ("tests_column", "tests"),
        ("code_setup_column", "setup_code"),
    ):
        column = getattr(args, option)
        if column and not (fmt.as_is and column == "answer" and column not in dataset.column_names):
            wanted[option] = (column, target)  # TRL's format keeps every column: a missing 'answer' is no error
    for option, (column, _) in wanted.items():
        if column not in dataset.column_names:
            raise RecipeError(
                f"The dataset has no column {column!r} ({option}); its columns are {dataset.column_names}. "
                f"Set {option} to one of them"
                + (", or null if no reward reads it." if option != "prompt_column" else ".")
            )
    if len(dataset) and fmt.chat is False and is_conversation(dataset[0][fmt.column]):
        raise RecipeError(
            f"chat_format: false, but the prompts in column {fmt.column!r} are conversations: drop chat_format (or "
            "set it true), or point prompt_column at a text column."
        )

    def to_prompt(row: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {"prompt": make_prompt(row[fmt.column], fmt)}
        for option, (column, target) in wanted.items():
            if option == "prompt_column":
                continue
            value = row[column]
            out[target] = (None if value is None else str(value)) if target == "answer" else value
        return out

    if max_rows is not None:
        dataset = dataset.select(range(min(max_rows, len(dataset))))
    if fmt.as_is:
        return dataset.map(to_prompt)
    kept = {"prompt", "answer", "tests", "entry_point", "setup_code", *keep}
    read = {fmt.column, args.code_setup_column} - set(keep)
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
