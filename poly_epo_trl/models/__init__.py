"""Built-in models a recipe names as ``builtin:<name>`` (``base``: the registry, and what a model path must hold;
registered where they are made: the tasks register their warm starts, ``smollm2`` is SmolLM2-135M-Instruct
converted from its GGUF file), a model's own settings held to its config before it loads (``checks``), and FSDP
weight shards merged into a model ``from_pretrained`` loads (``fsdp``)."""

from . import smollm2
from .base import MODEL_UNSET, MODELS, check_model_path, resolve_model
from .checks import check_model_settings
from .fsdp import FSDP_SHARDS, MERGED, MODEL_FILES, WEIGHTS, copy_model_files, has_weights, merge_fsdp_checkpoint
from .smollm2 import smollm2_path

__all__ = [
    "FSDP_SHARDS",
    "MERGED",
    "MODELS",
    "MODEL_FILES",
    "MODEL_UNSET",
    "WEIGHTS",
    "check_model_path",
    "check_model_settings",
    "copy_model_files",
    "has_weights",
    "merge_fsdp_checkpoint",
    "resolve_model",
    "smollm2",
    "smollm2_path",
]
