"""The real-LM benchmark's page half: from a results.json's per-prompt records, the summaries with their intervals,
the paired comparisons, the paper's targets, the figure, the docs page's block and the console table. It reads
records and writes pages; it runs nothing (``real_lm.py`` runs the comparison and calls ``publish``; ``real_lm.py
--results FILE`` draws a file again through ``recomputed``)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

LABELS = {"grpo": "GRPO (Dr.GRPO)", "grpo_div": "GRPO+DIV", "poly_epo": "Poly-EPO", "start": "start (warm start)"}
COLORS = {"GRPO (Dr.GRPO)": "tab:red", "GRPO+DIV": "tab:orange", "Poly-EPO": "tab:blue", "start (warm start)": "gray"}
CURVE = ("step", "eval_pass@1", "eval_distinct_correct_clusters")
PAGE_MARKERS = ("<!-- real-lm:start -->", "<!-- real-lm:end -->")


def machine(report: dict[str, Any]) -> str:
    """Which hardware and dtype produced a report's numbers (a report before the dtype was kept: float32)."""
    return f"{report['hardware']}, {report.get('precision', 'float32')}"


MARGIN = 0.05  # (b) and (d): how far below a reference still counts as keeping it
Records = list[dict[str, Any]]  # one evaluation's per-prompt records


def comparisons(finals: dict[str, list[Records]], start: Records, ks: list[int]) -> dict[str, Any]:
    """Paired on prompts (and on seeds between methods): each method against the pooled start, and Poly-EPO against
    every other method, at each reported k and in distinct correct answers (``report.records_difference``)."""
    from poly_epo_trl.evaluation.report import records_difference

    pairs = {f"{LABELS[m]} - start": records_difference(runs, start, ks) for m, runs in finals.items()}
    for m, runs in finals.items():
        if "poly_epo" in finals and m != "poly_epo":
            pairs[f"Poly-EPO - {LABELS[m]}"] = records_difference(finals["poly_epo"], runs, ks)
    return pairs


def gain_change(finals: dict[str, list[Records]], start: Records, k: int) -> dict[str, Any]:
    """Each method's gain over the start at pass@1 minus its gain at pass@``k``, paired on prompts (and seeds): the
    interval that says whether a gain shrinks with k, (M@1 - M@k) - (start@1 - start@k)."""
    from poly_epo_trl.evaluation.intervals import paired_difference
    from poly_epo_trl.evaluation.report import records_table as table

    def spread(runs: list[Records]) -> Any:
        return table(runs, "pass_at_k", 1) - table(runs, "pass_at_k", k)

    return {LABELS[m]: paired_difference(spread(runs), spread([start])[0]).as_dict() for m, runs in finals.items()}


def targets(
    finals: dict[str, list[list[dict[str, Any]]]], start: list[dict[str, Any]], k: int
) -> dict[str, dict[str, Any]]:
    """The paper's signature, each a paired interval that must clear its bound (``MARGIN`` = 0.05): (a) GRPO's
    pass@k below the start's (the interval of GRPO - start below 0); (b) Poly-EPO's at least the start's minus the
    margin and at least GRPO's minus the margin (both intervals above -0.05); (c) Poly-EPO's distinct correct
    answers at least 1.5x GRPO's (the interval of Poly-EPO - 1.5 x GRPO above 0); (d) Poly-EPO's pass@1 at most 5
    points below GRPO's (the interval of the difference above -0.05). Seeds pair between methods, prompts
    everywhere."""
    from poly_epo_trl.evaluation.intervals import paired_difference
    from poly_epo_trl.evaluation.report import records_table as table

    grpo, poly = finals["grpo"], finals["poly_epo"]
    at_k = {name: table(runs, "pass_at_k", k) for name, runs in (("grpo", grpo), ("poly", poly))}
    start_k = table([start], "pass_at_k", k)[0]
    below = paired_difference(at_k["grpo"], start_k)
    keeps_start = paired_difference(at_k["poly"], start_k)
    keeps_grpo = paired_difference(at_k["poly"], at_k["grpo"])
    distinct = table(poly, "distinct_correct_clusters"), table(grpo, "distinct_correct_clusters")
    contrast = paired_difference(*distinct, scale=1.5)
    first = paired_difference(table(poly, "pass_at_k", 1), table(grpo, "pass_at_k", 1))
    return {
        "grpo_below_start": {"met": below.clears(0.0, above=False), "k": k, "grpo_minus_start": below.as_dict()},
        "poly_epo_keeps_coverage": {
            "met": keeps_start.clears(-MARGIN) and keeps_grpo.clears(-MARGIN),
            "k": k,
            "margin": MARGIN,
            "poly_epo_minus_start": keeps_start.as_dict(),
            "poly_epo_minus_grpo": keeps_grpo.as_dict(),
        },
        "distinct_ratio": {
            "met": contrast.clears(0.0),
            "ratio": float(distinct[0].mean() / max(distinct[1].mean(), 1e-9)),
            "poly_epo_minus_1.5_grpo": contrast.as_dict(),
        },
        "pass_at_1": {"met": first.clears(-MARGIN), "margin": MARGIN, "poly_epo_minus_grpo": first.as_dict()},
    }


def figure(report: dict[str, Any], path: Path) -> None:
    """Distinct correct answers per held-out prompt over training, and the final pass@k against k, each method
    against the start."""
    from poly_epo_trl.evaluation.plots import training_figure

    s = report["settings"]
    curves = {
        LABELS[m]: [[(p["step"], p[CURVE[2]]) for p in run["curve"]] for run in by_seed.values()]
        for m, by_seed in report["runs"].items()
    }
    fig = training_figure(
        curves,
        "distinct correct answers",
        report["summary"],
        report["summary"][LABELS["grpo"]]["interval"] if LABELS["grpo"] in report["summary"] else "",
        COLORS,
    )
    fig.suptitle(
        f"{report['model']} on names_by_letter, {len(s['seeds'])} seeds, {machine(report)}", fontsize=10, y=1.0
    )
    fig.savefig(path, dpi=110, bbox_inches="tight")


TARGET_BOUNDS = {
    "grpo_below_start": ("grpo_minus_start", "below 0"),
    "poly_epo_keeps_coverage": ("poly_epo_minus_start", "above -0.05", "poly_epo_minus_grpo", "above -0.05"),
    "distinct_ratio": ("poly_epo_minus_1.5_grpo", "above 0"),
    "pass_at_1": ("poly_epo_minus_grpo", "above -0.05"),
}


def page(report: dict[str, Any], figure_path: str) -> str:
    """The results as the docs page shows them (Markdown): the summaries with intervals, the paired comparisons,
    the targets with the intervals that decide them, the step split, the backends' speeds where measured."""
    from poly_epo_trl.evaluation.report import format_interval

    s, summary = report["settings"], report["summary"]
    ks = summary[LABELS["start"]]["ks"]
    shown = [i for i, k in enumerate(ks) if k in (1, 4, 16, ks[-1])]
    head = ["run", *[f"pass@{ks[i]}" for i in shown], "distinct correct per prompt"]
    some = next(v for k, v in summary.items() if k != LABELS["start"])
    lines = [
        f"![pass@k against k, and distinct correct answers over training: the start and each method, "
        f"{len(s['seeds'])} seeds, {machine(report)}]({figure_path})",
        "",
        f"{report['model']}, held out: `{s['held_out']}` ({some['num_problems']} prompts x {s['eval_samples']} "
        f"samples a run; the start's samples pooled over the seeds' sampling seeds), seeds {s['seeds']}, "
        f"{machine(report)}: mean [{some['interval']}; the start's: over prompts]. {s['steps']} steps of "
        f"{s['prompts_per_step']} prompts x {s['num_generations']} rollouts, learning rate {s['learning_rate']:g}, "
        f"n = {s['set_size']}, lambda = {s['diversity_coef']:g}; {report['seconds'] / 60:.0f} minutes in all.",
        "",
        "| " + " | ".join(head) + " |",
        "| " + " | ".join("---" for _ in head) + " |",
    ]
    for name, stats in summary.items():
        cells = [format_interval(stats["pass_at_k"], 3, i) for i in shown]
        lines.append(
            f"| {name} | " + " | ".join(cells) + f" | {format_interval(stats['distinct_correct_clusters'], 2)} |"
        )
    chosen = [f"pass@{ks[i]}" for i in shown] + ["distinct correct"]
    lines += ["", "Paired differences (mean [95% interval], paired on prompts, and on seeds between methods):", ""]
    lines += ["| difference | " + " | ".join(chosen) + " |", "| --- |" + " --- |" * len(chosen)]
    for pair, stats in report["comparisons"].items():
        lines.append(f"| {pair} | " + " | ".join(format_interval(stats[c], 3) for c in chosen) + " |")
    if "gain_change" in report:
        change = "; ".join(f"{name} {format_interval(c, 3)}" for name, c in report["gain_change"].items())
        lines += ["", f"Gain over the start at pass@1 minus the gain at pass@{ks[-1]} (paired): {change}."]
    lines += ["", "| target | met | deciding interval | must lie |", "| --- | --- | --- | --- |"]
    for name, target in report["targets"].items():
        bounds = TARGET_BOUNDS[name]
        deciding = "; ".join(f"{bounds[i]} {format_interval(target[bounds[i]], 3)}" for i in range(0, len(bounds), 2))
        must = "; ".join(bounds[i + 1] for i in range(0, len(bounds), 2))
        lines.append(f"| `{name}` | {'yes' if target['met'] else '**no**'} | {deciding} | {must} |")
    split = report.get("step_seconds")
    if split:
        parts = list(next(iter(split.values())))
        lines += ["", "Seconds per training step, mean over seeds (" + report["hardware"] + "):", ""]
        lines += ["| method | " + " | ".join(parts) + " |", "| --- |" + " --- |" * len(parts)]
        for name, seconds in split.items():
            lines.append(f"| {name} | " + " | ".join(f"{seconds[p]:.2f}" for p in parts) + " |")
    if report.get("speeds"):
        lines += ["", *speeds_markdown(report["speeds"])]
    return "\n".join(lines)


def write_page(text: str, path: Path) -> None:
    """``text`` between the page's markers (the prose around them is the page's own)."""
    content = path.read_text()
    start, end = PAGE_MARKERS
    if start not in content or end not in content:
        raise SystemExit(f"error: --page {path}: it has no {start} ... {end} block to fill")
    path.write_text(
        re.sub(f"({re.escape(start)}\n).*?(\n{re.escape(end)})", lambda m: m[1] + text + m[2], content, flags=re.S)
    )


def analysis(
    settings: dict[str, Any], start_finals: dict[str, Any], runs: dict[str, dict[str, Any]]
) -> dict[str, Any]:
    """The summaries (the pooled start and each method, with intervals), the paired comparisons, the gain changes,
    and the targets where GRPO and Poly-EPO both ran (``settings``: the run's, as results.json keeps them)."""
    from poly_epo_trl.evaluation.report import pooled_records, records_summary, reported_ks

    methods = settings["methods"]
    finals = {m: [r["final"]["problems"] for r in runs[m].values()] for m in methods}
    start = pooled_records([final["problems"] for final in start_finals.values()])
    ks = reported_ks(settings["eval_samples"])
    summary = {LABELS["start"]: records_summary([start], ks, num_seeds=len(start_finals))}
    summary |= {LABELS[m]: records_summary(finals[m], ks) for m in methods}
    result = {
        "start_pooled": {"problems": start},
        "summary": summary,
        "comparisons": comparisons(finals, start, ks),
        "gain_change": gain_change(finals, start, ks[-1]),
    }
    if {"grpo", "poly_epo"} <= set(methods):
        result["targets"] = targets(finals, start, ks[-1])
    return result


def step_split(runs: dict[str, dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Each method's mean seconds per step over its seeds, split into its parts (``evaluation.curves.step_split``)."""
    from poly_epo_trl.evaluation.curves import step_split as split

    found = {LABELS[m]: split([r.get("step_parts", {}) for r in by_seed.values()]) for m, by_seed in runs.items()}
    return {label: parts for label, parts in found.items() if parts}


def recomputed(report: dict[str, Any]) -> dict[str, Any]:
    """``report`` (a results.json) with its summaries, paired comparisons and targets computed again by this library
    from the per-prompt records it keeps (``start_by_seed``, ``runs``): what ``--results`` draws the page from."""
    label_methods(report["settings"]["methods"])
    return {**report, **analysis(report["settings"], report["start_by_seed"], report["runs"])}


def publish(report: dict[str, Any], out: Path, page_path: Path | None) -> None:
    """``DIR/results.json``, the figure, and the results block (``DIR/real_lm.md``, and ``page_path``'s if given)."""
    out.mkdir(parents=True, exist_ok=True)
    s = report["settings"]
    (out / "results.json").write_text(json.dumps(report, indent=2) + "\n")
    figure(report, out / "real_lm.png")
    if "targets" in report:
        text = page(report, "figures/real_lm.png" if page_path else "real_lm.png")
        (out / "real_lm.md").write_text(text + "\n")
        if page_path:
            write_page(text, page_path)
            beside_page = page_path.parent / "figures" / "real_lm.png"
            beside_page.parent.mkdir(exist_ok=True)
            shutil.copyfile(out / "real_lm.png", beside_page)
    print(
        f"\n{report['model']} on names_by_letter ({report['hardware']}); held out: {s['held_out']}; seeds {s['seeds']}"
    )
    print(console_table(report))
    print(f"results: {out / 'results.json'}   figure: {out / 'real_lm.png'}   ({report['seconds'] / 60:.1f} min)")


def console_table(report: dict[str, Any]) -> str:
    """The summaries (``evaluation.report.format_table``), the paired comparisons, the targets and the step split, as
    plain text."""
    from poly_epo_trl.evaluation.report import format_table

    summary = report["summary"]
    ks = next(iter(summary.values()))["ks"]
    shown = [i for i, k in enumerate(ks) if k in (1, 4, 16, ks[-1])]
    columns = [(f"pass@{ks[i]}", "pass_at_k", i, 3) for i in shown] + [
        ("distinct correct", "distinct_correct_clusters", None, 2)
    ]
    chosen = [(c, c, None, 3) for c in [f"pass@{ks[i]}" for i in shown] + ["distinct correct"]]
    lines = [format_table(summary, "", columns), format_table(report["comparisons"], "paired differences", chosen)]
    for name, target in report.get("targets", {}).items():
        lines.append(f"  {'met' if target['met'] else 'NOT met'}: {name} {target}")
    for name, change in report.get("gain_change", {}).items():
        lines.append(f"  {name}: gain over the start at pass@1 minus at pass@{ks[-1]}: {change}")
    for name, split in report.get("step_seconds", {}).items():
        lines.append(f"  {name}: " + ", ".join(f"{part} {seconds:.2f} s" for part, seconds in split.items()))
    return "\n".join(lines)


def label_methods(names: list[str]) -> None:
    """Each method its registered label where the comparison has none of its own."""
    from poly_epo_trl.methods.base import METHODS as REGISTERED

    for m in names:
        LABELS.setdefault(m, REGISTERED.get(m).title)


def speeds_markdown(speeds: dict[str, Any]) -> list[str]:
    """``speeds.json`` as the real-LM page shows it: a table of training, one of evaluation."""
    lines = [f"Generation backends ({speeds['hardware']}, `real_lm_speed.py`, {speeds['steps']} steps each):", ""]
    lines += ["| training generation | fine-tuning | steps per minute | median step |", "| --- | --- | --- | --- |"]
    for row in speeds["training"]:
        lines.append(
            f"| {row['backend']} | {row['tuning']} | {row['steps_per_minute']:.2f} | {row['median_step']:.1f} s |"
        )
    lines += ["", "| held-out evaluation | completions per second | engine start |", "| --- | --- | --- |"]
    for row in speeds["evaluation"]:
        lines.append(f"| {row['backend']} | {row['per_second']:.1f} | {row['start']:.0f} s |")
    return lines
