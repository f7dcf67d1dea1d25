"""FSDP weight shards (SHARDED_STATE_DICT) merged into a folder ``from_pretrained`` loads, and the files a model
folder holds."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from ..recipe import RecipeError

FSDP_SHARDS = "pytorch_model_fsdp_0"
MERGED = "merged"
MODEL_FILES = ("config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json")
MODEL_FILES += ("chat_template.jinja", "special_tokens_map.json", "adapter_config.json")
WEIGHTS = ("model.safetensors", "model.safetensors.index.json", "adapter_model.safetensors")


def merge_fsdp_checkpoint(folder: Path) -> Path:
    """A checkpoint saved under FSDP with SHARDED_STATE_DICT (weight shards in ``pytorch_model_fsdp_0/``, no model
    file) as a folder ``from_pretrained`` loads: the shards merged once by accelerate's ``merge_fsdp_weights`` into
    ``<folder>/merged``, with the config (for LoRA, the adapter's: the merge is then the adapter) and tokenizer the
    trainer wrote beside them."""
    merged = folder / MERGED
    if has_weights(merged):
        return merged
    command = f"accelerate merge-weights {folder / FSDP_SHARDS} {merged}"
    adapter = (folder / "adapter_config.json").is_file()
    if not adapter and not (folder / "config.json").is_file():
        raise RecipeError(
            f"model_name_or_path={str(folder)!r} holds FSDP weight shards without a config.json: run `{command}`, "
            "then copy the run's config.json and tokenizer files into it and use that folder."
        )
    from accelerate.utils import merge_fsdp_weights

    print(f"{folder} holds FSDP shards: merging them into {merged} (as `{command}` does)", flush=True)
    partial = folder / f"{MERGED}.partial-{os.getpid()}"  # each process its own: ranks may merge at once
    shutil.rmtree(partial, ignore_errors=True)
    merge_fsdp_weights(str(folder / FSDP_SHARDS), str(partial), safe_serialization=True)
    if adapter:  # a LoRA checkpoint's shards are the adapter, under PEFT's saved names
        os.replace(partial / "model.safetensors", partial / "adapter_model.safetensors")
    copy_model_files(folder, partial, weights=False)
    try:
        os.replace(partial, merged)
    except OSError:  # another process finished first
        shutil.rmtree(partial, ignore_errors=True)
    return merged


def has_weights(folder: Path) -> bool:
    """Whether ``folder`` holds a model's (or an adapter's) weights."""
    return any((folder / name).is_file() for name in WEIGHTS)


def copy_model_files(source: Path, target: Path, weights: bool = True) -> None:
    """Copy what ``from_pretrained`` reads (config, tokenizer, and with ``weights`` the weight files, sharded ones
    too) from ``source`` into ``target``."""
    names = [*MODEL_FILES, *WEIGHTS] if weights else list(MODEL_FILES)
    if weights:
        names += [path.name for path in source.glob("model-*-of-*.safetensors")]
    for name in names:
        if (source / name).is_file():
            shutil.copy(source / name, target / name)
