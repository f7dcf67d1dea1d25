"""The CPU demo: GRPO, GRPO+DIV and Poly-EPO from a task's warm start, the same recipe but the ``trainer`` line.

    python -m poly_epo_trl.demo                      # defaults: the prime-pair task, 1 seed, the three methods
    python -m poly_epo_trl.demo --seeds 0 1 2 3 4
    python -m poly_epo_trl.demo --task sum_pair      # the toy sum task: every method solves every sum

Each run is a recipe given to ``poly_epo_trl.train``; evaluations, table and figure are ``evaluation``'s. Writes
results.json and demo.png (distinct correct strategies over training, pass@k against k) to --out.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import torch

from poly_epo_trl.assembly import assemble_training, held_out_summary, quiet_logging
from poly_epo_trl.commands import train
from poly_epo_trl.constants import BUILTIN_PREFIX
from poly_epo_trl.evaluation.plots import training_figure
from poly_epo_trl.evaluation.report import across_seeds, format_interval, format_table, records_difference
from poly_epo_trl.methods import get_method
from poly_epo_trl.methods.settings import default_of
from poly_epo_trl.tasks import TASKS

METHODS = ("grpo", "grpo_div", "poly_epo")
LABELS = {"grpo": "GRPO (Dr.GRPO)", "grpo_div": "GRPO+DIV", "poly_epo": "Poly-EPO", "warm": "warm start"}
CURVE = (
    "step",
    "eval_pass@1",
    "eval_distinct_correct_clusters",
    "eval_pcmd",
)  # the log history's keys the curves keep
COLORS = {"GRPO (Dr.GRPO)": "tab:red", "GRPO+DIV": "tab:orange", "Poly-EPO": "tab:blue", "warm start": "gray"}


@dataclass
class DemoSettings:
    task: str = "prime_pair"  # where GRPO loses problems at large k and Poly-EPO keeps them
    steps: int = 200
    learning_rate: float = 6e-4
    prompts_per_step: int = 8
    num_generations: int = 8
    method_settings: dict[str, Any] = field(default_factory=dict)  # recipe keys of the methods' own; else defaults
    eval_samples: int = 32
    curve_samples: int = 16
    curve_every: int = 25
    checkpoint: str | None = None
    methods: list[str] = field(default_factory=lambda: list(METHODS))
    seeds: list[int] = field(default_factory=lambda: [0])


FIXED = """--eval_at_start true --lr_scheduler_type constant --report_to none --save_strategy no --use_cpu true
--bf16 false --activation_checkpointing false --disable_tqdm true --log_level error"""


def recipe(method: str, seed: int, s: DemoSettings, out: Path) -> list[str]:
    """The run as ``poly-epo train`` arguments; the task supplies its reward, judge, warm start and prompt format."""
    task = BUILTIN_PREFIX + s.task
    flags = f"""--dataset_name {task} --eval_dataset_name {task} --eval_steps {s.curve_every} --trainer {method}
    --eval_num_samples {s.curve_samples} --output_dir {out / "runs" / f"{method}-seed{seed}"} --seed {seed}
    --data_seed {seed} --per_device_train_batch_size {s.prompts_per_step * s.num_generations}
    --num_generations {s.num_generations} --max_steps {s.steps}
    --learning_rate {s.learning_rate} --logging_steps {max(s.steps // 4, 1)}"""
    owned = {spec.name for spec in get_method(method).setting_fields()}
    given = [f"--{name}={value}" for name, value in s.method_settings.items() if name in owned]
    return [*FIXED.split(), *flags.split(), *given, *(["--model_name_or_path", s.checkpoint] if s.checkpoint else [])]


def method_options(methods: tuple[str, ...]) -> dict[str, Any]:
    """The methods' own settings (their dataclasses' fields) by name, each once: the demo's options that pass
    through to the recipes of the methods that own them."""
    return {spec.name: spec for name in methods for spec in get_method(name).setting_fields()}


def train_method(method: str, seed: int, s: DemoSettings, out: Path) -> dict[str, Any]:
    """One recipe through ``train``: its eval/* log history as curves, then the final held-out evaluation."""
    parsed = train.parse(recipe(method, seed, s, out))
    parts = assemble_training(*parsed)
    start = time.perf_counter()
    trainer = train.run(*parsed, parts, print_logs=False)
    seconds = time.perf_counter() - start
    curve = [{k: log[k] for k in CURVE if k in log} for log in trainer.state.log_history if CURVE[1] in log]
    final = held_out_summary(trainer, parts, s.eval_samples, parsed, seed)
    return {"curve": curve, "final": final, "train_seconds": seconds}


def warm_start(s: DemoSettings, out: Path) -> dict[str, Any]:
    """The warm start's final-style evaluation for each seed's sampling seed, through the recipe's (untrained)
    trainer."""
    print(f"evaluating the warm start on {s.task}'s held-out problems", flush=True)
    parsed = train.parse(recipe("grpo", 0, s, out))
    parts = assemble_training(*parsed)
    trainer = train.make_trainer(*parsed, parts, print_logs=False)
    return {str(seed): held_out_summary(trainer, parts, s.eval_samples, parsed, seed) for seed in s.seeds}


def run_demo(s: DemoSettings, out: Path) -> dict[str, Any]:
    """Every method for every seed, evaluated; results.json and demo.png under ``out``."""
    torch.set_num_threads(1)
    start = time.perf_counter()
    warm = warm_start(s, out)
    runs: dict[str, dict[str, Any]] = {m: {} for m in s.methods}
    todo = [(seed, m) for seed in s.seeds for m in s.methods]
    for i, (seed, method) in enumerate(todo, 1):
        print(f"training {i}/{len(todo)} {LABELS[method]}, seed {seed}", flush=True)
        runs[method][str(seed)] = train_method(method, seed, s, out)
    finals = {"warm": list(warm.values())} | {m: [run["final"] for run in runs[m].values()] for m in s.methods}
    summary = {LABELS[m]: across_seeds(values) for m, values in finals.items()}
    report = {"settings": asdict(s), "warm_start": warm, "summary": summary, "runs": runs}
    report.update(poly_epo_vs_grpo(summary, finals))
    report["seconds"] = time.perf_counter() - start
    (out / "results.json").write_text(json.dumps(report, indent=2))
    curves = {
        LABELS[m]: [[(p["step"], p[CURVE[2]]) for p in run["curve"]] for run in by_seed.values()]
        for m, by_seed in runs.items()
    }
    band = summary[LABELS["warm"]]["interval"]
    training_figure(curves, "distinct correct strategies", summary, band, COLORS).savefig(out / "demo.png", dpi=110)
    problems = summary[LABELS["warm"]]["num_problems"]
    print(f"\n{s.task}: {problems} held-out prompts, {s.eval_samples} samples each; seeds {s.seeds} (mean [{band}])")
    print(format_table(summary, first=""))
    print()
    for line in headline(summary, report):
        print(line)
    print(f"figure: {out / 'demo.png'}   numbers: {out / 'results.json'}   ({report['seconds']:.0f} s)")
    return report


def poly_epo_vs_grpo(summary: dict[str, Any], finals: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """Poly-EPO against GRPO: the ratio of the mean distinct correct clusters, the pass@1 difference of the means in
    points, and both differences with their 95% intervals, paired on problems and seeds
    (``report.records_difference``); empty unless both methods ran."""
    if "grpo" not in finals or "poly_epo" not in finals:
        return {}
    grpo, poly = summary[LABELS["grpo"]], summary[LABELS["poly_epo"]]
    distinct = [x["distinct_correct_clusters"]["mean"] for x in (poly, grpo)]
    runs = {m: [final["problems"] for final in finals[m]] for m in finals}
    return {
        "distinct_ratio_poly_epo_vs_grpo": distinct[0] / max(distinct[1], 1e-9),
        "pass_at_1_gap_points": 100 * (poly["pass_at_k"]["mean"][0] - grpo["pass_at_k"]["mean"][0]),
        "poly_epo_minus_grpo": records_difference(runs["poly_epo"], runs["grpo"], [1]),
    }


def headline(summary: dict[str, Any], report: dict[str, Any]) -> list[str]:
    """The numbers that matter: pass@k at the largest k for the warm start and each method, and Poly-EPO against
    GRPO in distinct correct strategies and pass@1, each difference with its paired interval."""
    n = summary[LABELS["warm"]]["num_samples"]
    at_n = ", ".join(f"{label} {stats['pass_at_k']['mean'][-1]:.3f}" for label, stats in summary.items())
    lines = [f"pass@{n} (problems solved within {n} tries): {at_n}"]
    if "distinct_ratio_poly_epo_vs_grpo" in report:
        paired = report["poly_epo_minus_grpo"]
        points = {key: 100 * paired["pass@1"][key] for key in ("mean", "low", "high")}
        lines += [
            f"Poly-EPO - GRPO, paired on problems and seeds (mean [95% interval]): distinct correct strategies "
            f"{format_interval(paired['distinct correct'], 2)} (ratio of the means "
            f"{report['distinct_ratio_poly_epo_vs_grpo']:.2f}x); pass@1 {format_interval(points, 1)} points"
        ]
    return lines


def parse_args(argv: list[str] | None, defaults: DemoSettings, out: Path) -> tuple[DemoSettings, Path]:
    parser = argparse.ArgumentParser(description=f"GRPO vs GRPO+DIV vs Poly-EPO on {defaults.task}, on CPU.")
    parser.add_argument("--out", type=Path, default=out)
    parser.add_argument("--task", default=defaults.task, help="a built-in task (builtin:<task>)")
    parser.add_argument("--seeds", type=int, nargs="+", default=defaults.seeds)
    parser.add_argument("--methods", nargs="+", default=defaults.methods, choices=METHODS)
    parser.add_argument("--checkpoint", default=None, help="a warm start other than the task's")
    numbers = ("steps", "learning_rate", "prompts_per_step", "num_generations")
    for name in (*numbers, "eval_samples", "curve_every", "curve_samples"):
        value = getattr(defaults, name)
        parser.add_argument(f"--{name.replace('_', '-')}", type=type(value), default=value)
    owned = method_options(METHODS)
    for name, spec in owned.items():
        value = defaults.method_settings.get(name, default_of(spec))
        parser.add_argument(f"--{name.replace('_', '-')}", help=f"default: the method's ({value!r})")
    args = parser.parse_args(argv)
    if args.task not in TASKS:
        parser.error(f"--task {args.task!r}: {TASKS.hint()}")
    given = {name: getattr(args, name) for name in owned if getattr(args, name) is not None}
    chosen = {f.name: getattr(args, f.name) for f in fields(DemoSettings) if f.name != "method_settings"}
    return DemoSettings(**chosen, method_settings={**defaults.method_settings, **given}), args.out


def main(
    argv: list[str] | None = None, defaults: DemoSettings | None = None, out: Path = Path("outputs/demo")
) -> dict[str, Any]:
    quiet_logging()
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")  # environment_factory is experimental in TRL 1.16
    settings, out = parse_args(argv, defaults or DemoSettings(), out)
    try:
        return run_demo(settings, out)
    except train.RecipeError as error:
        raise SystemExit(f"error: {error}") from None


if __name__ == "__main__":
    main()
