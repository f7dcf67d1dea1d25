"""How a table's rows become prompts: our problem column made into a prompt (instruction, system prompt, chat
format), or TRL's ``prompt`` column used as it is."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from datasets import Dataset

from ..models.checks import model_config
from ..recipe import RecipeError, refuse
from .loading import MATH_INSTRUCTION, DatasetArguments
from .rows import checked_prompts

logger = logging.getLogger(__name__)

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


SOURCE = ":as-read"  # a column written anew is read under its name with this suffix (``format_dataset``)


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
    for option, (column, _) in list(wanted.items()):
        if column not in dataset.column_names:
            message = (
                f"The dataset has no column {column!r} ({option}); its columns are {dataset.column_names}. "
                f"Set {option} to one of them"
                + (", or null if no reward reads it." if option != "prompt_column" else ".")
            )
            if option == "prompt_column":
                raise RecipeError(message)
            refuse(message)  # looked past (one_pass) as if set to null
            del wanted[option]
    if len(dataset) and fmt.chat is False and is_conversation(dataset[0][fmt.column]):
        raise RecipeError(
            f"chat_format: false, but the prompts in column {fmt.column!r} are conversations: drop chat_format (or "
            "set it true), or point prompt_column at a text column."
        )

    if max_rows is not None:
        dataset = dataset.select(range(min(max_rows, len(dataset))))
    converted = checked_prompts(dataset[fmt.column], fmt.column) if len(dataset) else None
    if converted is not None:
        logger.warning(
            "Column %r holds ShareGPT messages (from/value): converted to TRL's conversational format (role/content; "
            "human -> user, gpt -> assistant).",
            fmt.column,
        )

    # a column written anew (answer, tests, setup_code) is read under another name, or datasets would cast the text
    # back to the input column's type (an all-number answer column read back as numbers, removed or not)
    written = {target for option, (_, target) in wanted.items() if option != "prompt_column"}
    for name in sorted(written & set(dataset.column_names) - set(keep)):
        dataset = dataset.rename_column(name, f"{name}{SOURCE}")
        wanted = {o: (f"{c}{SOURCE}" if c == name else c, target) for o, (c, target) in wanted.items()}
    sources = [c for c in dataset.column_names if c.endswith(SOURCE)]

    def to_prompt(row: dict[str, Any], index: int) -> dict[str, Any]:
        value = row[wanted["prompt_column"][0]] if converted is None else converted[index]
        out: dict[str, Any] = {"prompt": make_prompt(value, fmt)}
        for option, (column, target) in wanted.items():
            if option == "prompt_column":
                continue
            named = column.removesuffix(SOURCE)
            out[target] = row_value(row[column], index, named, option, target, trl_format=fmt.as_is)
        return out

    if fmt.as_is:
        return dataset.map(to_prompt, with_indices=True, remove_columns=sources)
    kept = {"prompt", "answer", "tests", "entry_point", "setup_code", *keep}
    read = {fmt.column, args.code_setup_column} - set(keep)
    remove = [c for c in dataset.column_names if c not in kept or c in read or c in sources]
    return dataset.map(to_prompt, with_indices=True, remove_columns=remove)


def row_value(value: Any, index: int, column: str, option: str, target: str, trl_format: bool = False) -> Any:
    """A row's ``column`` as the rewards get it. An answer is text: a number as its text (``5`` -> ``"5"``, ``0.5``
    -> ``"0.5"``; a whole number without ``.0``, since a column of ``2`` and ``0.5`` reads back ``2.0``). RecipeError,
    naming the row, for an empty answer or tests cell (the rewards would get None while other rows have it) and for
    an answer that is a list or mapping (``[5]`` would reach them as the text ``"[5]"``). In TRL's format, which keeps
    every column and checks the rewards' own columns by name, an answer only becomes text."""
    if value is None:
        if trl_format or target not in ("answer", "tests"):
            return None
        raise RecipeError(
            f"Row {index} (counting from 0): column {column!r} ({option}) is empty, and the rewards read it as "
            f"{target!r}. Fill it or drop the row, or set {option}: null if no reward reads it."
        )
    if target != "answer":
        return value
    if isinstance(value, (list, dict, tuple)) and not trl_format:
        raise RecipeError(
            f"Row {index} (counting from 0): column {column!r} ({option}) holds {type(value).__name__} "
            f"{str(value)[:80]!r}; an answer is text (or a number), which the rewards compare. Give it as text, for "
            "example its one correct answer."
        )
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def prompt_chars(prompt: Any) -> int:
    """A prompt's characters: its text, or its messages' text contents together."""
    if isinstance(prompt, str):
        return len(prompt)
    if isinstance(prompt, list):
        return sum(prompt_chars(message.get("content")) for message in prompt if isinstance(message, dict))
    return 0


def widest_token(tokenizer: Any) -> int:
    """The most characters one token of ``tokenizer`` stands for (its longest vocabulary entry): a text of more than
    ``n`` times this many characters is more than ``n`` tokens."""
    return max(map(len, tokenizer.get_vocab()), default=1)


def far_past_context(
    prompts: Sequence[Any], model: str, revision: str | None, tokenizer: Callable[[], Any]
) -> str | None:
    """A refusal for prompts that cannot fit the model's context whatever the tokenizer makes of them: more
    characters than the context's tokens times the widest token's characters (the model's config read from disk,
    ``tokenizer`` loading its tokenizer only when a prompt is longer than the context in characters; a model not on
    disk is not checked). TRL would tokenize them whole and generate over them, for minutes or until memory runs out,
    before the first step. None when every prompt may fit."""
    config = model_config(model, revision)
    context = getattr(config.get_text_config() if config is not None else None, "max_position_embeddings", None)
    lengths = [prompt_chars(prompt) for prompt in prompts] if context else []
    if max(lengths, default=0) <= (context or 0):
        return None
    widest = widest_token(tokenizer())
    over = [(row, chars) for row, chars in enumerate(lengths) if chars > context * widest]
    if not over:
        return None
    row, chars = over[0]
    them = "them" if len(over) > 1 else "it"
    return (
        f"{len(over)} prompt{'s are' if len(over) > 1 else ' is'} far longer than the model's context: row {row} "
        f"(counting from 0) has {chars} characters, at least {chars // widest} tokens (its tokenizer's widest token "
        f"has {widest} characters), over max_position_embeddings={context}. Shorten or drop {them}, or set "
        "max_prompt_tokens to drop every prompt past that length."
    )


def drop_long_prompts(dataset: Dataset, tokenizer: Any, max_tokens: int) -> tuple[Dataset, int]:
    """Rows whose prompt is at most ``max_tokens`` tokens as the trainer will feed it (chat prompts through the chat
    template with the generation prompt), and how many were dropped: verl's ``filter_overlong_prompts``. A prompt of
    more characters than ``max_tokens`` of the widest token is dropped without being tokenized (a huge row costs no
    minutes)."""
    bound = max_tokens * widest_token(tokenizer)

    def length(row: dict[str, Any]) -> int:
        prompt = row["prompt"]
        if prompt_chars(prompt) > bound:
            return max_tokens + 1
        if isinstance(prompt, list):
            text = tokenizer.apply_chat_template(prompt, tokenize=False, add_generation_prompt=True)
            return len(tokenizer(text, add_special_tokens=False)["input_ids"])
        return len(tokenizer(prompt)["input_ids"])

    kept = dataset.filter(lambda row: length(row) <= max_tokens)
    return kept, len(dataset) - len(kept)
