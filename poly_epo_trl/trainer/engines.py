"""Which distributed engine trains the model, checked against what ``accelerate launch`` was asked for, and a final
save that leaves a model ``from_pretrained`` loads whatever the engine.

``accelerate launch`` says what it was asked for in the environment (``ACCELERATE_USE_DEEPSPEED``,
``ACCELERATE_USE_FSDP``); what the model gets is decided later by accelerate's state, which falls back without a word
(FSDP on CPU trains plain DDP). ``engine_of`` reads the engine from the trainer's accelerator, ``engine_mismatch``
and ``precision_mismatch`` say what disagrees and how to fix it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from accelerate.utils import DistributedType

from ..models import FSDP_SHARDS, copy_model_files, has_weights, merge_fsdp_checkpoint

ASKED = {"ACCELERATE_USE_DEEPSPEED": "deepspeed", "ACCELERATE_USE_FSDP": "fsdp"}
SHARDING = {
    "ddp": "nothing (each process holds the whole model and optimizer)",
    "single": "nothing (one process)",
    "zero0": "nothing (ZeRO stage 0)",
    "zero1": "optimizer state",
    "zero2": "optimizer state and gradients",
    "zero3": "parameters, gradients and optimizer state",
    "fsdp": "parameters, gradients and optimizer state",
}


@dataclass(frozen=True)
class Engine:
    """The engine the trainer's accelerator wraps the model with."""

    kind: str  # "single", "ddp", "deepspeed" or "fsdp"
    world_size: int
    machines: int
    mixed_precision: str
    zero_stage: int | None = None
    fsdp_version: int | None = None
    state_dict_type: str | None = None

    @property
    def name(self) -> str:
        if self.kind == "deepspeed":
            return f"DeepSpeed ZeRO-{self.zero_stage}"
        if self.kind == "fsdp":
            return f"FSDP{self.fsdp_version}"
        return "DDP" if self.kind == "ddp" else "one process"

    @property
    def sharding(self) -> str:
        key = f"zero{self.zero_stage}" if self.kind == "deepspeed" else self.kind
        return SHARDING[key]

    def describe(self) -> str:
        """The engine line a run prints: the engine at every world size (one-process DeepSpeed or FSDP included),
        where it runs, what it shards, its precision."""
        if self.kind == "single":
            return f"engine: one process, nothing sharded; mixed precision {self.mixed_precision}"
        where = f"{self.world_size} process" + ("es" if self.world_size > 1 else "")
        if self.machines > 1:
            where += f" on {self.machines} machines"
        saved = f"; state dict {self.state_dict_type}" if self.kind == "fsdp" else ""
        return (
            f"engine: {self.name} on {where}, sharding {self.sharding}; mixed precision {self.mixed_precision}{saved}"
        )


def asked_engine(environ: Mapping[str, str] = os.environ) -> str | None:
    """The engine ``accelerate launch`` was asked for ("deepspeed" or "fsdp"), or None for plain data parallel."""
    for variable, kind in ASKED.items():
        if environ.get(variable, "false").lower() == "true":
            return kind
    return None


def engine_of(accelerator: Any, environ: Mapping[str, str] = os.environ) -> Engine:
    """The engine the accelerator will wrap the model with (known once the trainer exists, before any step)."""
    state = accelerator.state
    world = accelerator.num_processes
    local = int(environ.get("LOCAL_WORLD_SIZE", world) or world)
    common = {
        "world_size": world,
        "machines": max(1, world // max(local, 1)),
        "mixed_precision": str(accelerator.mixed_precision),
    }
    if accelerator.distributed_type == DistributedType.DEEPSPEED:
        return Engine("deepspeed", zero_stage=int(state.deepspeed_plugin.zero_stage), **common)
    if accelerator.distributed_type == DistributedType.FSDP:
        plugin = state.fsdp_plugin
        return Engine(
            "fsdp", fsdp_version=int(plugin.fsdp_version), state_dict_type=plugin.state_dict_type.name, **common
        )
    return Engine("ddp" if world > 1 else "single", **common)


def engine_mismatch(asked: str | None, engine: Engine) -> str | None:
    """Why the engine is not the one asked for, with the fix; None when they agree."""
    if asked is None or asked == engine.kind:
        return None
    wanted = {"deepspeed": "DeepSpeed", "fsdp": "FSDP"}[asked]
    fix = (
        "accelerate runs FSDP only on GPUs (and other accelerators): on CPU it falls back to DDP. On CPU use "
        "recipes/accelerate_configs/zero2.yaml or zero3.yaml (DeepSpeed runs on CPU), or ddp.yaml/cpu.yaml for DDP"
        if asked == "fsdp"
        else "check that deepspeed is installed (pip install 'poly_epo_trl[deepspeed]') and that the recipe does "
        "not set use_cpu with a launcher that cannot honour it"
    )
    return f"accelerate launch asked for {wanted}, but the model would be trained with {engine.name}: {fix}."


def precision_mismatch(args: Any) -> str | None:
    """The launcher's mixed precision (its config's ``mixed_precision`` or ``--mixed_precision``) when the recipe
    asks for none: transformers would autocast anyway (DDP, FSDP) or stop with a traceback (DeepSpeed)."""
    launched = getattr(args, "mixed_precision", "no") or "no"
    if launched == "no" or args.bf16 or args.fp16:
        return None
    return (
        f"accelerate launch asks for mixed_precision={launched} (its config file or --mixed_precision), but the "
        f"recipe has bf16: false and fp16: false. Make them agree: add `--mixed_precision no` to accelerate launch "
        f"(on CPU, where {launched} is slow), or set {launched}: true in the recipe."
    )


def sharded_fsdp_plugin(trainer: Any) -> Any:
    """The trainer's FSDP plugin when it saves SHARDED_STATE_DICT (weight shards, no model file), else None."""
    plugin = getattr(trainer.accelerator.state, "fsdp_plugin", None)
    if getattr(trainer, "is_fsdp_enabled", False) and plugin is not None and "SHARDED" in plugin.state_dict_type.name:
        return plugin
    return None


def save_config_beside_shards(trainer: Any, folder: str) -> None:
    """Under FSDP with SHARDED_STATE_DICT a checkpoint holds weight shards and no ``config.json``: write the model's
    config and generation config (for LoRA, the adapter's config) and the tokenizer into ``folder`` so the shards
    can be merged into a model (``models.merge_fsdp_checkpoint``, which ``poly-epo eval`` and
    ``model_name_or_path`` use)."""
    if sharded_fsdp_plugin(trainer) is None:
        return
    if trainer.accelerator.is_main_process:
        model = trainer.accelerator.unwrap_model(trainer.model)
        adapters = getattr(model, "peft_config", None)
        if adapters:  # LoRA: the shards are the adapter's weights (PEFT's saved names)
            adapters[model.active_adapter].save_pretrained(folder)
        else:
            model.config.save_pretrained(folder)
            if getattr(model, "generation_config", None) is not None:
                model.generation_config.save_pretrained(folder)
        if trainer.processing_class is not None:
            trainer.processing_class.save_pretrained(folder)


def save_final_model(trainer: Any, output_dir: str) -> None:
    """``trainer.save_model`` with a model ``from_pretrained`` can load whatever the engine: under FSDP with
    SHARDED_STATE_DICT (fast checkpoints) the final save gathers the full state dict instead of writing shards."""
    plugin = sharded_fsdp_plugin(trainer)
    if plugin is not None:
        plugin.set_state_dict_type("FULL_STATE_DICT")
    trainer.save_model(output_dir)


def final_model_from_checkpoint(checkpoint: str, output_dir: str) -> bool:
    """Give ``output_dir`` the model of its run's last checkpoint when it has none (a run killed while writing its
    final model): the checkpoint's model files (FSDP shards merged first) copied over. True when it copied."""
    out = Path(output_dir)
    if has_weights(out):
        return False
    source = Path(checkpoint)
    if (source / FSDP_SHARDS).is_dir():
        source = merge_fsdp_checkpoint(source)
    copy_model_files(source, out)
    return True
