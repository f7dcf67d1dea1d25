"""Datasets for training and evaluation: a table read (``loading``: Hub, local file, TRL's mixture; built-in tasks
are ``tasks``'), its rows made into prompts (``prompts``), and what a run trained on (``problems``)."""

from .loading import (
    MATH_INSTRUCTION,
    MIXTURE_KEYS,
    DatasetArguments,
    check_local_rows,
    load_local_file,
    load_local_folder,
    load_mixture,
    load_table,
    local_format,
    mixture_columns,
)
from .problems import (
    TRAINING_PROBLEMS,
    load_training_problems,
    problem_fingerprints,
    refuse_training_rows,
    save_training_problems,
)
from .prompts import (
    PROBLEM_COLUMN,
    TRL_PROMPT_COLUMN,
    PromptFormat,
    conversational,
    drop_long_prompts,
    format_dataset,
    is_conversation,
    make_prompt,
    prompt_chars,
    prompt_format,
    widest_token,
)

__all__ = [
    "MATH_INSTRUCTION",
    "MIXTURE_KEYS",
    "PROBLEM_COLUMN",
    "TRAINING_PROBLEMS",
    "TRL_PROMPT_COLUMN",
    "DatasetArguments",
    "PromptFormat",
    "check_local_rows",
    "conversational",
    "drop_long_prompts",
    "format_dataset",
    "is_conversation",
    "load_local_file",
    "load_local_folder",
    "load_mixture",
    "load_table",
    "load_training_problems",
    "local_format",
    "make_prompt",
    "mixture_columns",
    "problem_fingerprints",
    "prompt_chars",
    "prompt_format",
    "refuse_training_rows",
    "save_training_problems",
    "widest_token",
]
