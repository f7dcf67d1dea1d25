"""Reading a table of problems: a Hub dataset, a local file (filtered by a split column), a file per split, a folder
of split files, or TRL's dataset mixture; each failure a one-line ``RecipeError`` that names the file or row."""

from __future__ import annotations

import functools
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from datasets import Dataset, load_dataset

from ..recipe import RecipeError, check_field_types

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
    path = Path(name).expanduser()
    local = "{split}" in name or local_format(path) is not None or path.is_dir()
    if local and args.dataset_config:
        raise RecipeError(
            f"dataset_config={args.dataset_config!r} names a configuration of a Hub dataset, and "
            f"dataset_name={name!r} is a local file or folder, which has none: drop dataset_config."
        )
    if "{split}" in name:
        return load_local_file(args, Path(name.replace("{split}", split)), split)
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
    mixture_columns(datasets)  # each entry read on its own first: a failure names its entry and its cause
    configs = [DatasetConfig(**entry) for entry in entries]
    try:
        mixed = get_dataset(DatasetMixtureConfig(datasets=configs))
    except Exception as error:
        raise RecipeError(f"The datasets mixture could not be loaded: {type(error).__name__}: {error}") from None
    if test_split_size is None:
        return mixed
    try:
        return mixed["train"].train_test_split(test_size=test_split_size, seed=0)
    except ValueError as error:
        raise RecipeError(f"test_split_size={test_split_size}: {error}") from None


@functools.lru_cache(maxsize=4)
def mixture_columns(datasets: str) -> list[list[str]]:
    """The columns of each entry of the mixture ``datasets`` (JSON of its list), each entry read on its own as TRL's
    ``get_dataset`` reads it (``columns`` selected). RecipeError naming the entry for a bad entry, an empty or
    unreadable local file, or a dataset that does not load."""
    columns = []
    for i, entry in enumerate(json.loads(datasets)):
        unknown = sorted(set(entry) - set(MIXTURE_KEYS)) if isinstance(entry, dict) else None
        if unknown is None or unknown or "path" not in entry:
            what = f"unknown keys {unknown}" if unknown else "no path"
            raise RecipeError(f"datasets[{i}]: {what}; each entry takes {list(MIXTURE_KEYS)}, path required.")
        where = f"datasets[{i}] (path {entry['path']!r})"
        files = entry.get("data_files") or ([entry["path"]] if local_format(Path(entry["path"])) else [])
        for file in [files] if isinstance(files, str) else list(files) if isinstance(files, list) else []:
            if Path(file).is_file() and not Path(file).read_bytes().strip():
                raise RecipeError(f"{where}: {file} is empty.")
        try:
            table = load_dataset(
                path=entry["path"],
                name=entry.get("name"),
                data_dir=entry.get("data_dir"),
                data_files=entry.get("data_files"),
                split=entry.get("split", "train"),
            )
        except Exception as error:
            cause = error.__cause__ or error
            raise RecipeError(f"{where} could not be loaded: {type(cause).__name__}: {cause}") from None
        names = list(table.column_names)
        wanted = entry.get("columns")
        missing = [c for c in wanted or [] if c not in names]
        if missing:
            raise RecipeError(f"{where}: columns {missing} are not in it; it has {names}.")
        columns.append(list(wanted) if wanted else names)
    return columns


CHECKED_BYTES = 1 << 30  # a local JSON-lines file up to this size is read once for its text before datasets loads it


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
    checked = kind == "json" and path.stat().st_size <= CHECKED_BYTES
    if checked:
        check_local_rows(path, name)  # pyarrow reads bad text without a word, and fails on it at the first row read
    try:
        table = load_dataset(kind, data_files=str(path), split="train")
    except Exception as error:
        if not checked:
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
    """A folder of split files named as ``datasets`` expects (``train.jsonl``, ``test.parquet``, ...). A folder with
    no data file at its top or in its ``data/`` (a home folder, say) is refused at once, not scanned."""
    if not has_data_files(path):
        raise RecipeError(
            f"dataset_name={name!r} is a folder with no data file at its top or in its data/ folder: point "
            "dataset_name at a file (rows.jsonl), or at a folder of split files (train.jsonl, test.jsonl)."
        )
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


DATA_SUFFIXES = (".json", ".jsonl", ".csv", ".parquet", ".arrow", ".txt")
LOOKED_AT = 10_000  # entries of a folder read to find its data files


def has_data_files(path: Path) -> bool:
    """Whether the folder holds a data file at its top or in ``data/`` (at most ``LOOKED_AT`` entries read each)."""
    for folder in (path, path / "data"):
        if not folder.is_dir():
            continue
        with os.scandir(folder) as entries:
            for count, entry in enumerate(entries):
                if count >= LOOKED_AT:
                    break
                name = entry.name.removesuffix(".gz")
                if name.endswith(DATA_SUFFIXES) and entry.is_file():
                    return True
    return False


def check_local_rows(path: Path, name: str) -> None:
    """RecipeError for an empty file, or a JSON-lines file with a line that is not UTF-8, not JSON, or JSON whose
    strings are not text (a lone surrogate such as ``"\\ud83d"``): the file, the line's number and why."""
    import gzip

    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as handle:
        lines = [(n, line) for n, line in enumerate(handle, 1) if line.strip()] if ".jsonl" in path.suffixes else None
    if lines == []:
        raise RecipeError(f"dataset_name={name!r}: the file is empty.")
    for number, line in lines or []:
        where = f"dataset_name={name!r}: {path}, line {number}"
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as error:
            raise RecipeError(
                f"{where} is not UTF-8 ({error.reason} at byte {error.start}): fix or drop it."
            ) from None
        try:
            row = json.loads(text.strip())
        except ValueError as error:
            raise RecipeError(f"{where} is not JSON ({error}).") from None
        try:
            json.dumps(row, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError as error:
            bad = error.object[error.start : error.end].encode("unicode_escape").decode()
            raise RecipeError(
                f"{where} holds {bad!r}, half of a surrogate pair, which is no text: fix or drop the row."
            ) from None


def local_format(path: Path) -> str | None:
    """The ``datasets`` builder for a local file (``.json``, ``.jsonl``, ``.csv``, ``.parquet``, also ``.gz``)."""
    suffixes = path.suffixes[-2:] if path.suffix == ".gz" else path.suffixes[-1:]
    kind = suffixes[0][1:] if suffixes else ""
    if kind not in ("json", "jsonl", "csv", "parquet") or (kind == "parquet" and path.suffix == ".gz"):
        return None
    return "json" if kind == "jsonl" else kind
