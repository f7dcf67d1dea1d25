"""A timing probe for the real-LM comparison's long arm: a few steps of each method on a tuning seed (100), timed as
the comparison times them, and the length that fits a time budget, so that the long arm is sized on the machine that
runs it (one GPU's lending is about 10 minutes a call).

    python benchmarks/real_lm_probe.py [--steps 8] [--budget-minutes 9] [--seeds-to-fit 3 5] [--out DIR]

Runs ``benchmarks/real_lm.py``'s pieces with its long arm's settings (``--arm long``) but ``--steps``: the start's
evaluation and each method's run and final evaluation. From their times (the first step left out of the step's median;
the start's evaluation taken as long as a run's final one) it prints, for each seed count, the most steps a run can
take for the whole comparison (the start's evaluations and every method and seed, one run at a time) to fit the
budget. Nothing it prints is a result; the long arm's length is then fixed on tuning seeds and written on the real-LM
page before the reported seeds run.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from real_lm import ARMS, METHODS, Settings, compare
from real_lm_page import machine

PROBE_SEED = 100  # a tuning seed: never a reported one


def plan(report: dict, budget_seconds: float, seeds: int) -> int:
    """The most steps a run can take for the comparison to fit ``budget_seconds`` with ``seeds`` seeds, from the
    probe's times: each method's median step, its run's fixed part (start-up, curve evaluations, saving) and its final
    evaluation, and the start's evaluation; 0 when even no steps fit."""
    fixed, per_step, evaluations = 0.0, 0.0, []
    for run in (by_seed[str(PROBE_SEED)] for by_seed in report["runs"].values()):
        step = statistics.median(run["step_times"][1:] or run["step_times"])
        fixed += run["train_seconds"] - step * len(run["step_times"]) + run["eval_seconds"]
        per_step += step
        evaluations.append(run["eval_seconds"])
    start = statistics.mean(evaluations)  # the start's evaluation is a final evaluation's size
    room = budget_seconds - seeds * (fixed + start)
    return max(int(room / (seeds * per_step)), 0) if per_step > 0 else 0


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--budget-minutes", type=float, default=9.0)
    parser.add_argument("--seeds-to-fit", type=int, nargs="+", default=[3, 5])
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--model", default=Settings.model)
    parser.add_argument("--start", default=None)
    parser.add_argument("--max-prompts", type=int, default=None)
    for name in ("prompts_per_step", "num_generations", "set_size", "eval_samples", "curve_samples"):
        parser.add_argument(f"--{name.replace('_', '-')}", type=int, default=None, help="the long arm's by default")
    args = parser.parse_args(argv)
    long = replace(Settings(), **ARMS["long"])
    sizes = {name: getattr(args, name) for name in ("prompts_per_step", "num_generations", "set_size", "eval_samples",
             "curve_samples") if getattr(args, name) is not None}  # fmt: skip
    probe = replace(
        long, steps=args.steps, curve_every=args.steps, seeds=[PROBE_SEED], methods=list(METHODS), workers=1,
        model=args.model, start=args.start, max_prompts=args.max_prompts, **sizes,
    )  # fmt: skip
    out = args.out or Path(tempfile.mkdtemp(prefix="real-lm-probe-"))
    report = compare(probe, out, None)
    if not all(by_seed[str(PROBE_SEED)]["step_times"] for by_seed in report["runs"].values()):
        raise SystemExit("the probe's runs logged no step: give fewer prompts per step than there are prompts")
    budget = 60 * args.budget_minutes
    print(f"\nprobe on {machine(report)}: {args.steps} steps of each method on seed {PROBE_SEED}")
    for method, by_seed in report["runs"].items():
        run = by_seed[str(PROBE_SEED)]
        step = statistics.median(run["step_times"][1:] or run["step_times"])
        print(f"  {method}: median step {step:.2f} s, run {run['train_seconds']:.0f} s, final evaluation "
              f"{run['eval_seconds']:.0f} s")  # fmt: skip
    fits = {seeds: plan(report, budget, seeds) for seeds in args.seeds_to_fit}
    for seeds, steps in fits.items():
        fit = f"{seeds} seeds x {len(METHODS)} methods fit {args.budget_minutes:g} minutes"
        print(f"  {fit} with at most {steps} steps a run (the long arm proposes {long.steps})")
    return {"report": report, "fits": fits}


if __name__ == "__main__":
    main()
