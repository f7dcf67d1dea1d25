"""The ``poly-epo`` command: ``poly-epo train ...``, ``poly-epo eval ...``, ``poly-epo demo ...``, ...."""

from __future__ import annotations

import importlib
import sys

from poly_epo_trl.commands.launch import launch, launches

COMMANDS = {
    "train": ("train", "train with a YAML recipe (--config recipes/...)"),
    "eval": ("eval", "pass@k, majority vote and distinct strategies of checkpoints, with plots"),
    "demo": ("demo.run", "the CPU demo: GRPO vs GRPO+DIV vs Poly-EPO on a toy task"),
    "agent-demo": (
        "demo.agent",
        "the CPU agent example: GRPO vs Poly-EPO on a tool-calling agent",
    ),
    "judge-agreement": (
        "agreement",
        "how alike judges cluster the same groups, and what each costs",
    ),
    "plot": ("plot", "a training run's curves as a PNG, from its own log history"),
    "env": ("env", "versions and setup to paste into a bug report (trl env, plus this package's)"),
}


def usage() -> str:
    lines = ["usage: poly-epo <command> [options]   (poly-epo <command> --help for its options)", ""]
    lines += ["  -V, --version    print the version", "", "commands:"]
    lines += [f"  {name:<16} {help_text}" for name, (_, help_text) in COMMANDS.items()]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        print(usage())
        return
    if argv[0] in ("-V", "--version"):
        from importlib.metadata import version

        from poly_epo_trl.constants import VERSION

        print(f"poly_epo_trl {VERSION} (TRL {version('trl')})")
        return
    if argv[0] not in COMMANDS:
        print(f"error: unknown command {argv[0]!r}\n\n{usage()}", file=sys.stderr)
        raise SystemExit(2)
    if argv[0] == "train" and launches(argv[1:]):
        sys.argv = ["poly-epo train", *argv[1:]]
        launch(argv[1:])  # accelerate starts the training processes; this one loads no training stack
        return
    module = importlib.import_module(f"{__package__}.{COMMANDS[argv[0]][0]}")
    sys.argv = [f"poly-epo {argv[0]}", *argv[1:]]
    module.main(argv[1:])


if __name__ == "__main__":
    main()
