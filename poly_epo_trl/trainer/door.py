"""The GRPO settings that ``GRPOConfig`` takes without complaint yet a library refuses later (at the first step, the
first generation, the first save), checked before any model loads: each value held to its field's type, numbers
finite, counts at least 1, and, where a library has the check, that library asked early with the run's values
(transformers' sampling processors, torch's AdamW), its refusal given back with the field's name. Every refusal is a
``ValueError`` naming the field, the value and what to set."""

from __future__ import annotations

import base64
import importlib.util
import json
import math
import os
import re
import typing
from dataclasses import fields
from typing import Any

from ..recipe import check_field_types

PLAIN = (bool, int, float, str, list, tuple, dict)  # the values a recipe or a keyword gives
FLOAT32_MAX = 3.4028234663852886e38  # the loss runs in float32 at least: a larger number overflows it
COUNTS = {  # a count a library divides by or loops over: field -> the least it may be
    "per_device_train_batch_size": 1,
    "per_device_eval_batch_size": 1,
    "gradient_accumulation_steps": 1,
    "steps_per_generation": 1,
    "generation_batch_size": 1,
    "num_iterations": 1,
    "max_completion_length": 1,
    "num_generations": 2,
}
WHY = {
    "num_iterations": "each generation batch is trained on num_iterations times: 0 would train on none",
    "num_generations": "a group needs at least 2 completions per prompt to compare (the paper samples 8)",
}
ADAMW = ("adamw_torch", "adamw_torch_fused", "adamw_hf", "adamw_torch_xla", "adamw_torch_npu_fused")
SAMPLING_ARGUMENTS = {  # the field of each sampling processor's argument, as transformers names it in its errors
    "temperature": "temperature",
    "top_k": "top_k",
    "top_p": "top_p",
    "min_p": "min_p",
    "penalty": "repetition_penalty",
}
# torch's AdamW errors, by the words that name what it refused: -> the GRPOConfig field
ADAMW_ERRORS = {
    "learning rate": "learning_rate",
    "epsilon": "adam_epsilon",
    "index 0": "adam_beta1",
    "index 1": "adam_beta2",
    "weight_decay": "weight_decay",
}


def check_grpo_settings(args: Any, typed: bool = False) -> None:
    """Every check of the module on ``args`` (a ``GRPOConfig``, before or after its own ``__post_init__``;
    ``typed``: its fields were already held to their types, as ``PolyEPOConfig`` holds them first)."""
    if not typed:
        plain = [spec.name for spec in fields(args) if isinstance(getattr(args, spec.name), PLAIN)]
        check_field_types(args, plain)  # not the objects GRPOConfig's __post_init__ makes of some (AcceleratorConfig)
    hints = typing.get_type_hints(type(args))
    nulls = [f.name for f in fields(args) if getattr(args, f.name) is None and hints.get(f.name) in (int, float, bool)]
    check_field_types(args, nulls, none_allowed=False)  # a recipe's null for a number that takes none
    check_mapping_texts(args, hints)
    check_numbers(args)
    check_counts(args)
    check_sampling(args)
    check_optimizer(args)
    check_scheduler(args)
    check_named(args)
    check_output_dir(args.output_dir)
    check_extras(args)


PATH_OR_MAPPING = ("accelerator_config", "fsdp_config")  # a JSON file's path, or the mapping (deepspeed: check_extras)


def check_mapping_texts(args: Any, hints: dict[str, Any]) -> None:
    """A mapping setting given as text (a recipe's string, a command line's JSON), before transformers or TRL read
    it: blank is refused (it would be dropped without a word), and text that is not a JSON object is refused with
    the field's name (transformers' json error names none); a ``*_kwargs`` field takes no other text, and
    ``PATH_OR_MAPPING`` fields may name a file. ``hints``: the fields' types (``typing.get_type_hints``)."""
    from trl import GRPOConfig

    theirs = {spec.name for spec in fields(GRPOConfig)}  # the fields this package adds check their own texts
    for spec in fields(args):
        value = getattr(args, spec.name)
        if spec.name not in theirs:
            continue
        takes_mapping = spec.name in PATH_OR_MAPPING or "dict" in str(hints.get(spec.name, ""))
        if not isinstance(value, str) or not takes_mapping or spec.name == "deepspeed":
            continue
        if not value.strip():
            raise ValueError(
                f"{spec.name}={value!r} is blank: give a mapping ({spec.name}: {{key: value}} in a recipe, JSON on "
                "the command line), or leave the key out for its default."
            )
        if value.lstrip().startswith("{") or spec.name not in PATH_OR_MAPPING:
            try:
                found = json.loads(value)
            except ValueError as error:
                raise ValueError(
                    f"{spec.name}={value!r} is not a JSON object ({error}): write it as a YAML mapping "
                    f"({spec.name}: {{key: value}}) or as JSON text with double quotes."
                ) from None
            if not isinstance(found, dict):
                raise ValueError(f"{spec.name}={value!r} is {type(found).__name__} in JSON: it must be a mapping.")


def float_fields(args: Any) -> list[str]:
    """The fields of ``args`` annotated as a float (or an optional one)."""
    hints = typing.get_type_hints(type(args))
    return [
        spec.name for spec in fields(args) if float in (hints.get(spec.name), *typing.get_args(hints.get(spec.name)))
    ]


def check_numbers(args: Any) -> None:
    """Each float setting is a finite number the float32 loss can hold."""
    for name in float_fields(args):
        value = getattr(args, name)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        if not math.isfinite(value) or abs(value) > FLOAT32_MAX:
            raise ValueError(
                f"{name}={value!r}: it must be a finite number within +-3.4e38 (the float32 the loss runs in); "
                f"drop the key for its default."
            )


def check_counts(args: Any) -> None:
    """The counts that a library divides by or loops over are at least their least (``COUNTS``)."""
    if getattr(args, "max_completion_length", 1) is None:
        raise ValueError(
            "max_completion_length=None: TRL sizes generation and the dr_grpo loss by it, and fails on none at the "
            "first step; give a number of tokens (TRL's default: 256)."
        )
    for name, least in COUNTS.items():
        value = getattr(args, name, None)
        if value is not None and not isinstance(value, bool) and isinstance(value, int) and value < least:
            why = WHY.get(name, "a library would fail on it at the first step")
            raise ValueError(f"{name}={value}: it must be at least {least} ({why}).")
    if not args.learning_rate >= 0:
        raise ValueError(f"learning_rate={args.learning_rate}: it must be >= 0 (the paper uses 1e-6).")


def check_sampling(args: Any) -> None:
    """The sampling settings, given to the transformers processors that generation builds from them (each built
    where ``generate`` builds it); greedy decoding (temperature 0) refused as it gives every group N identical
    completions."""
    from transformers.generation.logits_process import (
        MinPLogitsWarper,
        RepetitionPenaltyLogitsProcessor,
        TemperatureLogitsWarper,
        TopKLogitsWarper,
        TopPLogitsWarper,
    )

    if not args.temperature > 0:
        raise ValueError(
            f"temperature={args.temperature}: sampling needs a temperature > 0 (the paper uses 1.0); greedy decoding "
            "would give every group N identical completions."
        )
    if not 0 < args.top_p <= 1:
        raise ValueError(f"top_p={args.top_p}: it must be within (0, 1] (1 keeps every token).")
    try:
        TemperatureLogitsWarper(args.temperature)
        if args.top_k:
            TopKLogitsWarper(args.top_k)
        if args.top_p < 1:
            TopPLogitsWarper(args.top_p)
        if args.min_p is not None:
            MinPLogitsWarper(args.min_p)
        if args.repetition_penalty != 1:
            RepetitionPenaltyLogitsProcessor(args.repetition_penalty)
    except ValueError as error:
        said = str(error)
        name = next((field for word, field in SAMPLING_ARGUMENTS.items() if f"`{word}`" in said), "a sampling key")
        raise ValueError(
            f"{name}={getattr(args, name, None)!r}: transformers' generation refuses it ({said}). Set {name} "
            "within that range, or drop the key for its default."
        ) from None


def check_optimizer(args: Any) -> None:
    """An optimizer transformers cannot build here (a package it needs is missing: ``optimizer_problem``), and an
    AdamW optimizer's settings, given to torch's AdamW on one parameter (its own checks, at once)."""
    optim = getattr(args.optim, "value", args.optim)
    from transformers.training_args import OptimizerNames

    names = [name.value for name in OptimizerNames]
    if optim not in names:
        import difflib

        close = difflib.get_close_matches(str(optim), names, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise ValueError(
            f"optim={optim!r} is not one of transformers' optimizers: {hint}use adamw_torch (TRL's default) or one of "
            f"{names}."
        )
    if optim not in ADAMW:
        problem = optimizer_problem(args)
        if problem:
            raise ValueError(
                f"optim={optim!r}: {problem.rstrip('.')}. Install it, or use optim: adamw_torch (TRL's default)."
            )
        return
    import torch

    try:
        torch.optim.AdamW(
            [torch.zeros(1, requires_grad=True)],
            lr=float(args.learning_rate),
            betas=(float(args.adam_beta1), float(args.adam_beta2)),  # an int (a recipe's 0) is a float to the Trainer
            eps=float(args.adam_epsilon),
            weight_decay=float(args.weight_decay),
        )
    except ValueError as error:
        said = str(error)
        name = next((field for words, field in ADAMW_ERRORS.items() if words in said), "learning_rate")
        raise ValueError(
            f"{name}={getattr(args, name)!r}: torch's AdamW refuses it ({said}); betas are within [0, 1) (TRL's "
            "defaults: adam_beta1 0.9, adam_beta2 0.999), epsilon and weight_decay >= 0."
        ) from None


def optimizer_problem(args: Any) -> str | None:
    """Why transformers cannot build ``args.optim`` here (a package it needs is not installed), asked of
    transformers itself (``Trainer.get_optimizer_cls_and_kwargs``, what the first step calls); None when it can."""
    from transformers import Trainer

    try:
        Trainer.get_optimizer_cls_and_kwargs(args)
    except ImportError as error:
        return str(error)
    except (ValueError, TypeError, KeyError, AttributeError):  # needs the model (GaLore's modules): the step's to say
        pass
    return None


def check_scheduler(args: Any) -> None:
    """``lr_scheduler_type`` with ``lr_scheduler_kwargs``, given to transformers' ``get_scheduler`` on one parameter:
    a scheduler that needs a setting (``cosine_with_min_lr``'s ``min_lr``) says so now, not at the first step."""
    import torch
    from transformers.optimization import get_scheduler

    name = getattr(args.lr_scheduler_type, "value", args.lr_scheduler_type)
    kwargs = args.lr_scheduler_kwargs
    if isinstance(kwargs, str):  # a command line's JSON, which transformers parses in __post_init__
        try:
            kwargs = json.loads(kwargs or "{}")
        except ValueError:
            return  # transformers' own __post_init__ says what is wrong with it
    kwargs = kwargs if isinstance(kwargs, dict) else {}
    optimizer = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=1.0)
    steps = args.max_steps if isinstance(args.max_steps, int) and args.max_steps > 0 else 100
    try:
        get_scheduler(name, optimizer, num_warmup_steps=0, num_training_steps=steps, scheduler_specific_kwargs=kwargs)
    except (ValueError, TypeError) as error:
        raise ValueError(
            f"lr_scheduler_type={name!r} with lr_scheduler_kwargs={kwargs!r}: transformers' scheduler refuses it "
            f"({error}). Give what it asks in lr_scheduler_kwargs (cosine_with_min_lr: lr_scheduler_kwargs: "
            "{min_lr_rate: 0.1}), or another lr_scheduler_type."
        ) from None


def trl_loss_types() -> tuple[str, ...]:
    """The loss types TRL's GRPOTrainer supports, as GRPOConfig's ``loss_type`` help lists them ("Supported values
    are 'grpo', 'dr_grpo', ..."): the one place TRL declares them (its loss raises on any other at the first step).
    ``tests/test_trl_seams.py`` checks the list still reads that way."""
    from trl import GRPOConfig

    help_ = GRPOConfig.__dataclass_fields__["loss_type"].metadata.get("help", "")
    listed = re.search(r"Supported values are (.*?)\.\s", help_)
    return tuple(re.findall(r"'(\w+)'", listed.group(1))) if listed else ()


def reporting_names() -> tuple[str, ...]:
    """What ``report_to`` takes: transformers' integrations by name, "all" and "none"."""
    from transformers.integrations.integration_utils import INTEGRATION_TO_CALLBACK

    return ("none", "all", *sorted(INTEGRATION_TO_CALLBACK))


def check_named(args: Any) -> None:
    """Values that name something another library looks up only later: the loss type (TRL's loss, at the first
    step), the seed (numpy's, within [0, 2**32)), the trackers of ``report_to`` (transformers' callbacks) and an
    empty ``fsdp`` (transformers reads any string as FSDP on)."""
    losses = trl_loss_types()
    if losses and args.loss_type not in losses:
        close = [name for name in losses if name.replace("_", "") == str(args.loss_type).replace("-", "").lower()]
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ValueError(
            f"loss_type={args.loss_type!r}{hint}: TRL's GRPO loss takes one of {list(losses)} (the paper's: dr_grpo)."
        )
    for name in ("seed", "data_seed"):
        value = getattr(args, name, None)
        if isinstance(value, int) and not isinstance(value, bool) and not 0 <= value < 2**32:
            raise ValueError(
                f"{name}={value}: numpy seeds within [0, 2**32 - 1] only, and the run seeds it at the start; give "
                f"a seed in that range (e.g. {name}: 42)."
            )
    reports = args.report_to if isinstance(args.report_to, (list, tuple)) else [args.report_to]
    known = reporting_names()
    for name in reports:
        if name is None or (isinstance(name, str) and name in known):
            continue
        fix = "none" if str(name).strip().lower() in ("none", "null", "no", "false", "") else None
        raise ValueError(
            f"report_to={args.report_to!r}: {name!r} is no tracker transformers knows"
            + (f"; for no tracker write report_to: {fix} (lower case)." if fix else f"; use one of {list(known)}.")
        )
    fsdp = getattr(args, "fsdp", None)
    if isinstance(fsdp, str) and fsdp != "" and not fsdp.strip():
        raise ValueError(
            f"fsdp={fsdp!r} is blank, and transformers reads any string as FSDP on: leave the key out for no FSDP, "
            "or launch with poly-epo train --accelerate_config recipes/accelerate_configs/fsdp2.yaml."
        )


def check_output_dir(output_dir: Any) -> None:
    """``output_dir`` is a path the filesystem can hold: not empty, each part and the whole within its limits."""
    if output_dir is None:
        return
    if not str(output_dir).strip():
        raise ValueError("output_dir='': the run writes its checkpoints there; name a folder (output_dir: runs/x).")
    path = os.path.abspath(os.path.expanduser(str(output_dir)))
    existing = path
    while not os.path.exists(existing):
        existing = os.path.dirname(existing)
    try:
        name_max, path_max = os.pathconf(existing, "PC_NAME_MAX"), os.pathconf(existing, "PC_PATH_MAX")
    except (OSError, ValueError):
        name_max, path_max = 255, 4096
    longest = max(path.split(os.sep), key=lambda part: len(part.encode()))
    if len(longest.encode()) > name_max:
        raise ValueError(
            f"output_dir={str(output_dir)[:60]!r}...: its part {longest[:40]!r}... is {len(longest.encode())} bytes, "
            f"more than the {name_max} a file name may have here. Shorten it."
        )
    if len(path.encode()) + 64 > path_max:  # room for checkpoint-N/ and the file names inside
        raise ValueError(
            f"output_dir is {len(path.encode())} bytes long: with a checkpoint's file names it would pass the "
            f"{path_max} a path may have here. Shorten it."
        )


def deepspeed_config_problem(value: str) -> str | None:
    """What keeps transformers from reading ``value`` as a DeepSpeed config (None: it reads it): a config is a JSON
    file, or a config's JSON, plain or base64-encoded."""
    if os.path.isfile(value):
        try:
            with open(value) as file:
                json.load(file)
        except (ValueError, OSError) as error:
            return (
                f"not a DeepSpeed JSON config ({error}); an accelerate config (YAML) is launched with "
                f"poly-epo train --accelerate_config {value}"
            )
        return None
    for text in (value, _base64_text(value)):
        try:
            if isinstance(json.loads(text or ""), dict):
                return None
        except ValueError:
            continue
    return (
        "no such file, and not a config's JSON: name a DeepSpeed JSON config, or launch with poly-epo train "
        "--accelerate_config recipes/accelerate_configs/zero2.yaml (DeepSpeed through accelerate)"
    )


def _base64_text(value: str) -> str | None:
    try:
        return base64.urlsafe_b64decode(value).decode()
    except (ValueError, UnicodeDecodeError):
        return None


def check_extras(args: Any) -> None:
    """A setting that needs an optional extra says which to install; an empty ``deepspeed`` is refused (transformers
    would run without DeepSpeed, silently)."""
    if isinstance(getattr(args, "deepspeed", None), str) and not args.deepspeed.strip():
        raise ValueError(
            f"deepspeed={args.deepspeed!r} is empty: name a DeepSpeed JSON config, or leave the key out and launch "
            "with accelerate launch --config_file recipes/accelerate_configs/zero2.yaml."
        )
    value = getattr(args, "deepspeed", None)
    if isinstance(value, str) and (problem := deepspeed_config_problem(value)):
        raise ValueError(f"deepspeed={value!r}: {problem}.")
    if getattr(args, "deepspeed", None) and importlib.util.find_spec("deepspeed") is None:
        raise ValueError(
            f"deepspeed={args.deepspeed!r} needs DeepSpeed, which is not installed: pip install "
            "'poly_epo_trl[deepspeed]' (from a clone: pip install '.[deepspeed]'), or drop the key."
        )
