"""The exploration methods side by side, on one footing: every registered method trained from the demo's warm start
with the demo's settings (each method at its own defaults), evaluated on the held-out problems as the demo evaluates
them, with the judge's diversity (distinct correct clusters), the judge-free diversity (PCMD and its effective number
of modes) and the rewards (pass@1, mean reward) beside each other, and each method against Dr.GRPO paired on problems
and seeds.

    python benchmarks/methods.py --task prime_pair --seeds 0 1 2 3 4 --out DIR [--methods grpo poly_epo ...]
    python benchmarks/methods.py --task tradeoff --seeds 0 1 2 3 4 --out DIR
    python benchmarks/methods.py --results benchmarks/results/methods_prime_pair.json --out DIR \
        --page docs/pages/methods.md

``--task``: a toy task (``TOY_TASKS``): ``prime_pair``, where every diverse answer is also a correct one, and
``tradeoff``, where one prime pair earns 1.0 and the others 0.5, so that diversity costs reward. Writes
``DIR/results.json`` (``ks``; ``runs[method][seed]`` with the curve, the final evaluation's per-problem records and
the training seconds; ``summary[method]``; ``versus_grpo[method]``; ``seconds``), ``DIR/methods_<task>.png`` (pass@k
against k, PCMD against the training step) and ``DIR/page.md`` (the page's block). ``--page`` fills the task's block
between the page's markers (``markers``). ``--results FILE`` recomputes every statistic from a results file's
per-problem records with this library and draws the figure and the page again, running nothing. The runs go to
``--workers`` processes of one core each.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import sys
import time
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BASELINE = "grpo"
START = "warm start"
TOY_TASKS = ("prime_pair", "tradeoff")
REWARD_X_DIVERSITY = ("poly_epo", "darling", "grpo_div", "setpo")  # the objectives that weigh reward with diversity


def markers(task: str) -> tuple[str, str]:
    """The methods page's block of ``task``."""
    return f"<!-- methods:{task}:start -->", f"<!-- methods:{task}:end -->"


def figure_name(task: str) -> str:
    return f"methods_{task}.png"


def registered() -> list[str]:
    """Every registered method, Dr.GRPO first."""
    from poly_epo_trl.methods import METHODS

    return [BASELINE, *(name for name in METHODS.names() if name != BASELINE)]


def label(method: str) -> str:
    """A method's name in tables and figures: its label, with its recipe name."""
    from poly_epo_trl.methods import METHODS

    if method == START:
        return START
    found = METHODS.get(method).label
    return f"{found} ({method})" if found and found != method else method


def hardware() -> str:
    import torch

    if torch.cuda.is_available():
        return f"one {torch.cuda.get_device_name(0)}"
    return f"{len(os.sched_getaffinity(0))} CPU cores"


def one_core() -> None:
    """A worker's setup: one torch thread, the library's quiet logging."""
    import torch

    from poly_epo_trl.assembly import quiet_logging

    torch.set_num_threads(1)
    quiet_logging()
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")


def train_one(method: str, seed: int, settings: dict[str, Any], out: str) -> dict[str, Any]:
    """One method and seed through the demo's recipe (``commands.demo.run.train_method``), in a worker."""
    from poly_epo_trl.commands.demo.run import DemoSettings, train_method

    return train_method(method, seed, DemoSettings(**settings), Path(out))


def run_all(settings: Any, out: Path, workers: int) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """The warm start's evaluations, then every (method, seed) on ``workers`` processes; progress on the console."""
    from poly_epo_trl.commands.demo.run import warm_start

    one_core()
    warm = warm_start(settings, out)
    todo = [(m, seed) for seed in settings.seeds for m in settings.methods]
    runs: dict[str, dict[str, Any]] = {m: {} for m in settings.methods}
    began = time.perf_counter()
    with concurrent.futures.ProcessPoolExecutor(workers, initializer=one_core) as pool:
        futures = {pool.submit(train_one, m, seed, asdict(settings), str(out)): (m, seed) for m, seed in todo}
        for done, future in enumerate(concurrent.futures.as_completed(futures), 1):
            method, seed = futures[future]
            runs[method][str(seed)] = future.result()
            minutes = (time.perf_counter() - began) / 60
            print(f"  {done}/{len(todo)} {label(method)}, seed {seed} ({minutes:.1f} min)", flush=True)
    runs = {m: dict(sorted(by_seed.items(), key=lambda item: int(item[0]))) for m, by_seed in runs.items()}
    return warm, runs


def analysis(report: dict[str, Any]) -> dict[str, Any]:
    """``summary`` (each method and the warm start over seeds and problems, ``evaluation.report.across_seeds``) and
    ``versus_grpo`` (each method minus Dr.GRPO, paired on problems and seeds: pass@k at every k, PCMD, mean reward
    and distinct correct clusters, ``records_difference``), from the per-problem records alone."""
    from poly_epo_trl.evaluation.report import across_seeds, records_difference

    finals = {START: list(report["warm_start"].values())}
    finals |= {m: [run["final"] for run in by_seed.values()] for m, by_seed in report["runs"].items()}
    summary = {m: across_seeds(values) for m, values in finals.items()}
    for s in summary.values():
        s["pass@1"] = {name: s["pass_at_k"][name][0] for name in ("mean", "low", "high")}
    ks = summary[START]["ks"]
    versus = {}
    if BASELINE in report["runs"]:
        base = [final["problems"] for final in finals[BASELINE]]
        for method in report["runs"]:
            if method != BASELINE:
                diff = records_difference([f["problems"] for f in finals[method]], base, ks)
                diff["pass_at_k"] = {name: [diff[f"pass@{k}"][name] for k in ks] for name in ("mean", "low", "high")}
                versus[method] = diff
    return {"ks": ks, "summary": summary, "versus_grpo": versus}


def cell(stat: dict[str, Any] | None, digits: int, at: int | None = None) -> str:
    from poly_epo_trl.evaluation.report import format_interval

    return format_interval(stat, digits, at) if stat is not None else "-"


def seconds_per_run(report: dict[str, Any], method: str) -> float:
    runs = report["runs"][method].values()
    return sum(run["train_seconds"] for run in runs) / len(runs)


def table(report: dict[str, Any]) -> list[str]:
    """The methods' table: pass@1, mean reward, pass@k at the largest k, distinct correct clusters, PCMD, N_eff,
    seconds per run, each with its interval."""
    summary, ks = report["summary"], report["ks"]
    n = ks[-1]
    head = [
        "method",
        "pass@1",
        "mean reward",
        f"pass@{n}",
        "distinct correct",
        "PCMD (problems a seed)",
        "N_eff",
        "s / run",
    ]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for method, s in summary.items():
        seconds = f"{seconds_per_run(report, method):.0f}" if method in report["runs"] else "-"
        pcmd = cell(s.get("pcmd"), 3) + (f" ({s['pcmd_problems']:.1f})" if s.get("pcmd") is not None else "")
        row = [
            f"`{method}`" if method != START else START,
            cell(s["pass_at_k"], 3, 0),
            cell(s.get("mean_reward"), 3),
            cell(s["pass_at_k"], 3, -1),
            cell(s.get("distinct_correct_clusters"), 2),
            pcmd,
            cell(s.get("effective_modes"), 2),
            seconds,
        ]
        lines.append("| " + " | ".join(row) + " |")
    return lines


def differences(report: dict[str, Any]) -> list[str]:
    """Each method minus Dr.GRPO, paired on problems and seeds; a cell whose interval holds 0 is marked "(0 in it)"."""
    n = report["ks"][-1]
    head = ["method - Dr.GRPO", "pass@1", "mean reward", f"pass@{n}", "distinct correct", "PCMD"]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for method, diff in report["versus_grpo"].items():
        cells = [diff.get(key) for key in ("pass@1", "mean reward", f"pass@{n}", "distinct correct", "pcmd")]
        digits = (3, 3, 3, 2, 3)
        shown = [
            "-" if c is None else cell(c, d) + (" (0 in it)" if c["low"] <= 0 <= c["high"] else "")
            for c, d in zip(cells, digits, strict=True)
        ]
        lines.append("| " + " | ".join([f"`{method}`", *shown]) + " |")
    return lines


def trade_off(report: dict[str, Any]) -> list[str]:
    """What each reward x diversity objective gives up, or gains, in pass@1 and mean reward against Dr.GRPO, said
    from the intervals: below, above, or not told apart."""
    said = []
    for method in REWARD_X_DIVERSITY:
        diff = report["versus_grpo"].get(method)
        if diff is None:
            continue
        words = []
        for key, name in (("pass@1", "pass@1"), ("mean reward", "mean reward")):
            c = diff.get(key)
            if c is None:
                continue
            verdict = "below Dr.GRPO's" if c["high"] < 0 else "above Dr.GRPO's" if c["low"] > 0 else None
            verdict = verdict or "not told apart from Dr.GRPO's"
            words.append(f"{name} {verdict} ({cell(c, 3)})")
        said.append(f"- `{method}` against Dr.GRPO: " + "; ".join(words) + ".")
    return said


def page(report: dict[str, Any], figure_path: str | None = None) -> str:
    """The page's block: the settings, the table, the paired differences, the trade-off, the figure, the time."""
    s = report["settings"]
    summary = report["summary"]
    minutes = report["seconds"] / 60
    figure_path = figure_path or f"figures/{figure_name(s['task'])}"
    return "\n".join(
        [
            f"`python benchmarks/methods.py --task {s['task']} --seeds {' '.join(map(str, s['seeds']))}`, "
            f"{report['hardware']}, {minutes:.1f} minutes for every method and seed (the warm start's evaluations "
            f"included); {summary[START]['num_problems']} held-out problems x {summary[START]['num_samples']} "
            f"samples, {len(s['seeds'])} seeds, {s['steps']} steps each. Means with their "
            f"{summary[START]['interval']}; PCMD is the mean of the seeds' ModeBench cells (each the mean over that "
            "seed's problems with two or more correct samples; how many, on average, in brackets) with a t interval "
            "over the seeds (the problems held fixed), and N_eff = 1 / (1 - PCMD) of that mean.",
            "",
            *table(report),
            "",
            "Each method minus Dr.GRPO, paired on problems and seeds (mean [95% interval]):",
            "",
            *differences(report),
            "",
            "What a reward x diversity objective gives up on this task, from the intervals above:",
            "",
            *trade_off(report),
            "",
            f"![pass@k against k and PCMD over training, every method, {report['hardware']}]({figure_path})",
        ]
    )


FIXED_COLORS = {"grpo": "tab:red", "grpo_div": "tab:orange", "poly_epo": "tab:blue", START: "gray"}
OTHER_COLORS = ("tab:green", "tab:purple", "tab:brown", "tab:pink", "tab:olive", "tab:cyan", "gold", "lime", "teal",
                "navy", "magenta", "black")  # fmt: skip


def figure(report: dict[str, Any], path: Path) -> None:
    """PCMD over training (each method's mean over seeds, each seed thin) beside pass@k against k (means: with
    fourteen lines their intervals would hide each other; the table has them)."""
    from poly_epo_trl.evaluation.plots import training_figure

    others = iter(OTHER_COLORS)
    colors = {label(m): FIXED_COLORS.get(m) or next(others) for m in report["summary"]}
    curves = {
        label(m): [[(p["step"], p["eval_pcmd"]) for p in run["curve"] if "eval_pcmd" in p] for run in by_seed.values()]
        for m, by_seed in report["runs"].items()
    }
    means = {
        label(m): {**s, "pass_at_k": {name: s["pass_at_k"]["mean"] for name in ("mean", "low", "high")}}
        for m, s in report["summary"].items()
    }
    s = report["settings"]
    band = f"means over {len(s['seeds'])} seeds x {report['summary'][START]['num_problems']} problems"
    fig = training_figure(curves, "PCMD of the correct answers", means, band, colors)
    fig.set_size_inches(14, 6)
    fig.suptitle(f"{s['task']}: every method from one warm start, {report['hardware']}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def write_page(text: str, path: Path, task: str) -> None:
    page_text = path.read_text()
    start, end = markers(task)
    if start not in page_text or end not in page_text:
        raise SystemExit(f"{path} has no {start} ... {end} block to fill")
    before, rest = page_text.split(start, 1)
    path.write_text(before + start + "\n" + text + "\n" + end + rest.split(end, 1)[1])


def publish(report: dict[str, Any], out: Path, page_path: Path | None) -> None:
    """results.json, the figure and the page's block (``DIR/page.md``; with ``page_path`` into that page between its
    markers too, the figure beside the page)."""
    out.mkdir(parents=True, exist_ok=True)
    name = figure_name(report["settings"]["task"])
    (out / "results.json").write_text(json.dumps(report, indent=1))
    figure(report, out / name)
    (out / "page.md").write_text(page(report, name) + "\n")
    if page_path is not None:
        (page_path.parent / "figures").mkdir(exist_ok=True)
        figure(report, page_path.parent / "figures" / name)
        write_page(page(report), page_path, report["settings"]["task"])
    print(console(report))
    print(f"results: {out / 'results.json'}   figure: {out / name}   ({report['seconds'] / 60:.1f} min)")


def console(report: dict[str, Any]) -> str:
    return "\n".join([*table(report), "", *differences(report), "", *trade_off(report)])


def recomputed(report: dict[str, Any]) -> dict[str, Any]:
    """A results file's report with every statistic computed again from its per-problem records."""
    return {**report, **analysis(report)}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    from poly_epo_trl.commands.demo.run import DemoSettings

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--task", default="prime_pair", choices=TOY_TASKS)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--methods", nargs="+", default=None, help="default: every registered method")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--page", type=Path, default=None, help="fill this page's block (docs/pages/methods.md)")
    parser.add_argument("--results", type=Path, default=None, help="redraw from this results.json, running nothing")
    parser.add_argument("--workers", type=int, default=len(os.sched_getaffinity(0)))
    for spec in fields(DemoSettings):
        if spec.name in ("steps", "learning_rate", "prompts_per_step", "num_generations", "eval_samples"):
            parser.add_argument(f"--{spec.name.replace('_', '-')}", type=type(spec.default), default=spec.default)
    args = parser.parse_args(argv)
    if args.results is not None:
        report = recomputed(json.loads(args.results.read_text()))
        publish(report, args.out, args.page)
        return report
    methods = args.methods or registered()
    if BASELINE not in methods:
        parser.error(f"--methods must include {BASELINE} (Dr.GRPO), the baseline every method is compared with")
    unknown = sorted(set(methods) - set(registered()))
    if unknown:
        parser.error(f"--methods {unknown}: not registered methods; use some of {registered()}")
    numbers = {name: getattr(args, name) for name in ("steps", "learning_rate", "prompts_per_step", "num_generations")}
    settings = DemoSettings(
        task=args.task, seeds=args.seeds, methods=methods, eval_samples=args.eval_samples, **numbers
    )
    began = time.perf_counter()
    args.out.mkdir(parents=True, exist_ok=True)
    warm, runs = run_all(settings, args.out, args.workers)
    report = {"settings": asdict(settings), "hardware": hardware(), "warm_start": warm, "runs": runs}
    report["seconds"] = time.perf_counter() - began
    report.update(analysis(report))
    publish(report, args.out, args.page)
    return report


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
