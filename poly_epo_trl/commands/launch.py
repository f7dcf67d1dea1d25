"""``poly-epo train --accelerate_config zero2 --num_processes 8 ...``: the launcher's half of ``poly-epo train``. It
starts ``accelerate launch -m poly_epo_trl.train`` with those options, as ``trl grpo`` does, and imports only
accelerate's launcher to do it: the training stack (TRL's trainer, the recipe's configs) loads in the processes it
starts, not in this one too."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import NoReturn

TRIGGERS = ("--accelerate_config", "--num_processes")
# accelerate launch's options that are also recipe keys (the recipe's, so they go to every process, not to the
# launcher); tests/test_door_edges.py checks it against both sides' fields
RECIPE_KEYS = ("--debug", "--gradient_accumulation_steps")


def launches(argv: list[str]) -> bool:
    """Whether ``poly-epo train argv`` starts the launcher: a launcher option, outside a launched process."""
    return "WORLD_SIZE" not in os.environ and any(a.split("=", 1)[0] in TRIGGERS for a in argv)


def stop(message: str) -> NoReturn:
    sys.stderr.write(f"{message}\n")
    sys.stderr.flush()
    raise SystemExit(2)


def launch_flags() -> dict[str, bool]:
    """``accelerate launch``'s own options that no recipe key shadows, each with whether it takes a value."""
    from accelerate.commands.launch import launch_command_parser

    flags = {"--accelerate_config": True}
    for action in launch_command_parser()._actions:
        for option in action.option_strings:
            if option.startswith("--") and option not in RECIPE_KEYS and option != "--help":
                flags[option] = action.nargs != 0
    return flags


def split_launch_args(argv: list[str]) -> tuple[list[str], list[str]]:
    """``argv`` as (``accelerate launch``'s options, the recipe's)."""
    flags, launch, recipe = launch_flags(), [], []
    items = iter(argv)
    for arg in items:
        name = arg.split("=", 1)[0]
        if name not in flags:
            recipe.append(arg)
            continue
        launch.append(arg)
        if flags[name] and "=" not in arg:
            launch.append(next(items, ""))
    return launch, recipe


def launch(argv: list[str]) -> None:
    """Start ``accelerate launch -m poly_epo_trl.train`` with ``argv``'s launcher options (``--accelerate_config``: a
    file, or the name of a config TRL ships: zero1/2/3, fsdp1/2, multi_gpu, single_gpu); the other arguments go to
    every process."""
    from accelerate.commands.launch import launch_command, launch_command_parser
    from trl.cli.accelerate_config import resolve_accelerate_config_argument

    launch_args, recipe_args = split_launch_args(argv)
    try:
        launch_args = resolve_accelerate_config_argument(launch_args)
    except ValueError as error:
        stop(f"error: --accelerate_config: {error}")
    problem = launch_problem(launch_args)
    if problem:
        stop(f"error: {problem}")
    command = launch_command_parser().parse_args([*launch_args, "--module", "poly_epo_trl.train", *recipe_args])
    launch_command(command)


def launch_problem(launch_args: list[str]) -> str | None:
    """What ``accelerate launch`` would stop on with a traceback, in one line: a process count below 1, a config file
    that is not a mapping of accelerate's keys."""
    import yaml

    def value(flag: str) -> str | None:
        for i, arg in enumerate(launch_args):
            if arg == flag and i + 1 < len(launch_args):
                return launch_args[i + 1]
            if arg.startswith(f"{flag}="):
                return arg.split("=", 1)[1]
        return None

    processes = value("--num_processes")
    if processes is not None and (not processes.lstrip("-").isdigit() or int(processes) < 1):
        return f"--num_processes {processes}: the number of processes to launch, at least 1."
    config = value("--config_file")
    if config is not None:
        try:
            loaded = yaml.safe_load(Path(config).read_text())
        except (OSError, yaml.YAMLError) as error:
            return f"--accelerate_config {config}: cannot be read as YAML ({error})."
        if not isinstance(loaded, dict):
            return (
                f"--accelerate_config {config}: holds {type(loaded).__name__}, not a mapping of accelerate's keys "
                "(`accelerate config` writes one; recipes/accelerate_configs/ has examples)."
            )
    return None
