"""What TRL's vLLM generation does not expose, applied where TRL builds it (``trl.generation.vllm_generation``'s
``LLM`` and ``VLLMClient``, seams pinned by ``tests/test_trl_seams.py``): the colocated engine's dtype and eager mode,
and, on CPU only, the CPU build's weight-sync workarounds (``vllm_cpu``)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch


def engine_overrides(settings: Any, policy_dtype: torch.dtype) -> dict[str, Any]:
    """Keyword arguments added to TRL's ``LLM(...)`` for ``settings`` (``PolyEPOSettings``: ``vllm_dtype``,
    ``vllm_enforce_eager``)."""
    overrides: dict[str, Any] = {}
    dtype = settings.vllm_dtype
    if dtype == "policy":
        overrides["dtype"] = str(policy_dtype).removeprefix("torch.")
    elif dtype != "auto":
        overrides["dtype"] = dtype
    if settings.vllm_enforce_eager:
        overrides["enforce_eager"] = True
    return overrides


@contextlib.contextmanager
def vllm_seams(trainer: Any, args: Any, settings: Any) -> Iterator[None]:
    """While TRL's ``GRPOTrainer.__init__`` runs (``args``: its GRPOConfig, or None; ``settings``: the
    ``PolyEPOSettings``):

    - colocate: the engine gets ``engine_overrides`` (the policy's dtype is read when the engine is built, after the
      model loaded); on vLLM's CPU platform its linear layers keep their weights for the sync (as the
      ``vllm_cpu.register`` plugin does too, unless ``VLLM_PLUGINS`` leaves it out);
    - server, with the trainer on CPU: the client syncs weights through a file
      (``vllm_cpu.client.FileSyncVLLMClient``), since TRL's NCCL sync needs CUDA.

    Does nothing without ``use_vllm`` or without vLLM (TRL then says how to install it)."""
    from trl.generation import vllm_generation

    if not (getattr(args, "use_vllm", False) and hasattr(vllm_generation, "LLM")):
        yield
        return

    from .. import vllm_cpu

    original_llm, original_client = vllm_generation.LLM, vllm_generation.VLLMClient

    def build_engine(*positional: Any, **kwargs: Any) -> Any:
        if vllm_cpu.on_cpu_platform():
            vllm_cpu.keep_linear_weights()
        return original_llm(*positional, **{**kwargs, **engine_overrides(settings, trainer.model.dtype)})

    def build_client(*positional: Any, **kwargs: Any) -> Any:
        if trainer.accelerator.device.type != "cpu":
            return original_client(*positional, **kwargs)
        from ..vllm_cpu.client import FileSyncVLLMClient

        return FileSyncVLLMClient(*positional, **kwargs)

    vllm_generation.LLM, vllm_generation.VLLMClient = build_engine, build_client
    try:
        yield
    finally:
        vllm_generation.LLM, vllm_generation.VLLMClient = original_llm, original_client
