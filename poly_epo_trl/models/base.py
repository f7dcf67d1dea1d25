"""The built-in models' registry (``builtin:<name>``), and what a model path must hold before anything loads."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ..constants import BUILTIN_PREFIX
from ..recipe import RecipeError
from ..registry import Registry
from .fsdp import FSDP_SHARDS, merge_fsdp_checkpoint

MODELS: Registry[Callable[[], str]] = Registry("model")
MODEL_UNSET = (
    "model_name_or_path is not set: name the model to train (a Hub id or a local directory), or builtin:demo for "
    "the CPU demo's tiny model."
)


def resolve_model(name: str | None) -> str:
    """``builtin:<name>`` as the folder of that registered model (``builtin:demo``, ``builtin:smollm2``, ...);
    anything else (a Hub id, a local folder) as it is."""
    if not name:
        raise RecipeError(MODEL_UNSET)
    if name.startswith(BUILTIN_PREFIX):
        builtin = name.removeprefix(BUILTIN_PREFIX)
        if builtin not in MODELS:
            raise RecipeError(f"model_name_or_path={name!r}: no such built-in model; {MODELS.hint()}")
        return MODELS.get(builtin)()
    if (Path(name).expanduser() / FSDP_SHARDS).is_dir():
        return str(merge_fsdp_checkpoint(Path(name).expanduser()))
    return name


def check_model_path(name: str | None, field_name: str = "model_name_or_path", hub_cache: bool = True) -> None:
    """RecipeError for a model that cannot be found before anything loads: unset, a local path (absolute, ``./``,
    ``~``, or more than one ``/``; a Hub id has one) that does not exist, or a folder with no model in it (a run's
    output_dir before its first save: its ``checkpoint-N`` folders are named), or (``hub_cache``) a Hub id offline that
    is not in the cache."""
    if not name:
        raise RecipeError(MODEL_UNSET)
    if name.startswith(BUILTIN_PREFIX):
        return
    path = Path(name).expanduser()
    if path.is_file():
        raise RecipeError(
            f"{field_name}={name!r} is a file: name the folder that holds the model (its config.json and weights), "
            "or a Hub id."
        )
    looks_local = name.startswith(("/", ".", "~")) or name.count("/") > 1 or path.is_dir()
    if not looks_local:
        if hub_cache:
            check_hub_cache(name, field_name)
        return
    if not path.exists():
        raise RecipeError(f"{field_name}={name!r}: no such directory.")
    if path.is_dir() and not any((path / f).is_file() for f in ("config.json", "adapter_config.json")):
        from transformers.trainer_utils import get_last_checkpoint

        latest = get_last_checkpoint(str(path))
        hint = f" Its latest checkpoint is {latest!r}." if latest else " Has the run saved a model yet?"
        raise RecipeError(f"{field_name}={name!r}: no model in this folder (no config.json).{hint}")


def check_hub_cache(repo_id: str, field_name: str) -> None:
    """RecipeError for a Hub model that is not in the local cache while ``HF_HUB_OFFLINE`` is set: the load would fail
    after a long traceback."""
    import os

    if os.environ.get("HF_HUB_OFFLINE", "0").lower() not in ("1", "true", "yes", "on"):
        return
    from huggingface_hub import try_to_load_from_cache

    if not any(isinstance(try_to_load_from_cache(repo_id, f), str) for f in ("config.json", "adapter_config.json")):
        raise RecipeError(
            f"{field_name}={repo_id!r} is not in the Hub cache, and HF_HUB_OFFLINE is set: download it once online "
            f"(`hf download {repo_id}`), unset HF_HUB_OFFLINE, or point {field_name} at a local folder."
        )
