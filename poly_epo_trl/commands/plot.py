"""``poly-epo plot``: a training run's curves as a PNG, from its own log history; no dashboard needed.

    poly-epo plot outputs/tiny/poly_epo                      # -> outputs/tiny/poly_epo/training_curves.png
    poly-epo plot outputs/demo/runs/* --out demo_curves.png   # every method, its seeds thin and their mean thick

Panels: reward, distinct and distinct-correct clusters per group, set score, judge fallback fraction, an agent's tool
calls per episode, held-out pass@k over steps (``evaluation.curves``). A run still going, or stopped, is read from
its newest checkpoint.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from poly_epo_trl.assembly import parse_and_run
from poly_epo_trl.evaluation.curves import FIGURE, plot_runs
from poly_epo_trl.recipe import RecipeError


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="poly-epo plot", description=__doc__.split("\n\n")[0].replace("``", ""))
    parser.add_argument("run_dirs", nargs="+", type=Path, help="training output_dirs (a method's seeds: <name>-seedK)")
    parser.add_argument("--out", type=Path, help=f"the PNG (default: {FIGURE} in the run's folder, or their parent)")
    return parser.parse_args(argv)


def run(args: argparse.Namespace) -> Path:
    parent = Path(os.path.commonpath([d.resolve() for d in args.run_dirs]))
    out = args.out or (parent / FIGURE)
    try:
        return plot_runs(args.run_dirs, out)
    except (FileNotFoundError, ValueError) as error:
        raise RecipeError(str(error)) from None


def main(argv: list[str] | None = None) -> Path:
    _, path = parse_and_run(parse, run, argv)
    print(f"wrote {path}")
    return path


if __name__ == "__main__":
    main()
