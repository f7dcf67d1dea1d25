"""Built-in models a recipe names as ``builtin:<name>`` (``base``: the registry, and what a model path must hold;
registered where they are made: the tasks register their warm starts, ``smollm2`` is SmolLM2-135M-Instruct
converted from its GGUF file), and FSDP weight shards merged into a model ``from_pretrained`` loads (``fsdp``)."""

from . import smollm2
from .base import MODEL_UNSET, MODELS, check_model_path, resolve_model
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
    "copy_model_files",
    "has_weights",
    "merge_fsdp_checkpoint",
    "resolve_model",
    "smollm2",
    "smollm2_path",
]
