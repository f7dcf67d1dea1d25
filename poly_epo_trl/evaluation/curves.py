"""Training curves from a run's own log history (``trainer_state.json``), as one figure: no dashboard needed.

Panels (those the runs logged): reward, distinct and distinct-correct clusters per group, set score, the judge's
fallback fraction, an agent's tool calls per episode, and held-out pass@k over steps (the in-training evaluation's
``eval_pass@k``; ``eval/pass@k`` in older runs' logs, read as the same): a line per k for one run, a panel per k to
compare runs. Several runs of one method (seeds) are drawn thin with their mean thick, as the demo's figures are
(``plots.draw_training``); rates are drawn on [0, 1]."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .plots import draw_training

if TYPE_CHECKING:  # matplotlib loads when a figure is drawn, not with training
    from matplotlib.figure import Figure

STATE = "trainer_state.json"
FIGURE = "training_curves.png"  # what the end of training and ``poly-epo plot`` write into a run's folder
PANELS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("reward", ("reward",)),
    ("distinct clusters per group", ("poly_epo/distinct_clusters", "poly_epo/distinct_correct_clusters")),
    ("set score", ("poly_epo/set_score",)),
    ("judge fallback fraction", ("judge/fallback_frac",)),
    ("training judge vs audit judge: adjusted Rand", ("judge_audit/adjusted_rand",)),
    ("distinct clusters per audited group", ("judge_audit/distinct_train", "judge_audit/distinct_audit")),
    ("tool calls per episode", ("tools/call_frequency",)),  # agents: TRL's count of calls over rollouts
)
LINESTYLES = ("-", "--", ":", "-.")
PASS_AT_K = re.compile(r"^eval_pass@(\d+)$")
OLDER_EVAL_KEY = re.compile(r"^eval/(pass@\d+|maj@\d+|vote_share|distinct_correct_clusters)$")  # before eval_
Curve = list[tuple[int, float]]


STEP_PARTS = ("step_time", "time/rollout", "time/generation", "judge/wait_seconds", "time/advantage")


def step_split(runs: list[dict[str, list[float]]]) -> dict[str, float] | None:
    """Mean seconds per training step over several runs' logged timings (``STEP_PARTS``, each a list of the values
    a run logged), and its parts: generation; the rest of the rollout (log-probabilities, rewards, the judge's wait,
    the method); the judge's wait; the method's advantage alone; the loss and backward pass (the step less the
    rollout). None where a run logged no rollout time."""
    if not runs or not all(parts.get("time/rollout") for parts in runs):
        return None
    values = {key: [v for parts in runs for v in parts.get(key, [])] for key in STEP_PARTS}
    mean = {key: sum(found) / len(found) if found else 0.0 for key, found in values.items()}  # no judge: no wait
    return {
        "step": mean["step_time"],
        "generation": mean["time/generation"],
        "scoring and judging": mean["time/rollout"] - mean["time/generation"],
        "judge wait": mean["judge/wait_seconds"],
        "advantage": mean["time/advantage"],
        "loss and backward": mean["step_time"] - mean["time/rollout"],
    }


def log_history(run_dir: str | Path) -> list[dict[str, Any]]:
    """A run's log history: its final ``trainer_state.json``, else its newest checkpoint's (a run still going, or
    stopped). FileNotFoundError names what was looked for."""
    run_dir = Path(run_dir)
    checkpoints = sorted(run_dir.glob(f"checkpoint-*/{STATE}"), key=lambda p: int(p.parent.name.split("-")[-1]))
    candidates = [run_dir / STATE, *reversed(checkpoints)]
    for path in candidates:
        if path.exists():
            history = json.loads(path.read_text())["log_history"]
            return [{OLDER_EVAL_KEY.sub(r"eval_\1", key): value for key, value in log.items()} for log in history]
    raise FileNotFoundError(f"{run_dir}: no {STATE} there or in a checkpoint-*/ folder (is it a training output_dir?)")


def curve(history: list[dict[str, Any]], key: str) -> Curve:
    """(step, value) of every log that has ``key``; the last value of a step where it was logged twice."""
    points = {log["step"]: float(log[key]) for log in history if isinstance(log.get(key), (int, float))}
    return sorted(points.items())


RATES = ("judge/fallback_frac", "eval_pass@")  # keys (or their starts) of rates, drawn on [0, 1]


def panels_of(histories: list[list[dict[str, Any]]], one_run: bool = True) -> list[tuple[str, list[str]]]:
    """The panels with data in any of the histories: (title, keys). Held-out pass@k is one panel with a line per k
    for ``one_run``, else one panel per k."""
    keys = {key for history in histories for log in history for key in log}
    out = [(title, [k for k in wanted if k in keys]) for title, wanted in PANELS]
    ks = sorted(int(m.group(1)) for key in keys if (m := PASS_AT_K.match(key)))
    if one_run:
        out.append(("held-out pass@k", [f"eval_pass@{k}" for k in ks]))
    else:
        out += [(f"held-out pass@{k}", [f"eval_pass@{k}"]) for k in ks]
    return [(title, names) for title, names in out if names]


def curves_figure(runs: dict[str, list[list[dict[str, Any]]]], columns: int = 3) -> Figure:
    """One panel per metric; in each, every run name's histories (one per seed) over training steps. A run keeps its
    color in every panel; in a panel of several metrics (distinct and distinct-correct clusters, pass@k per k) each
    metric has its own line style, or for a single run its own color."""
    histories = [h for group in runs.values() for h in group]
    panels = panels_of(histories, one_run=len(runs) == 1)
    if not panels:
        raise ValueError("none of the runs logged a metric to plot (reward, poly_epo/*, judge/*, eval_pass@k)")
    run_colors = {name: f"C{i}" for i, name in enumerate(runs)}
    rows = -(-len(panels) // columns)
    from matplotlib.figure import Figure

    fig = Figure(figsize=(5.2 * min(columns, len(panels)), 3.9 * rows))
    for i, (title, keys) in enumerate(panels):
        ax = fig.add_subplot(rows, min(columns, len(panels)), i + 1)
        lines: dict[str, list[Curve]] = {}
        colors, styles = {}, {}
        for name, group in runs.items():
            for j, key in enumerate(keys):
                metric = key.split("/")[-1].removeprefix("eval_").replace("_", " ")
                label = name if len(keys) == 1 else (metric if len(runs) == 1 else f"{name}: {metric}")
                found = [c for c in (curve(h, key) for h in group) if c]
                if found:
                    lines[label] = found
                    colors[label] = f"C{j}" if len(runs) == 1 else run_colors[name]
                    styles[label] = "-" if len(runs) == 1 else LINESTYLES[j % len(LINESTYLES)]
        draw_training(ax, lines, title, colors, styles)
        ax.set_title(title, fontsize=9)
        if all(key.startswith(RATES) for key in keys):
            ax.set_ylim(-0.02, 1.02)
    fig.tight_layout()
    return fig


def run_name(run_dir: Path) -> str:
    """A run's name on the figure: its folder's name without a ``-seed<k>`` suffix, so a method's seeds group."""
    return re.sub(r"-seed\d+$", "", run_dir.resolve().name)


def plot_runs(run_dirs: list[Path], out: Path) -> Path:
    """``curves_figure`` of the runs (grouped by ``run_name``) written to ``out``."""
    runs: dict[str, list[list[dict[str, Any]]]] = {}
    for run_dir in run_dirs:
        runs.setdefault(run_name(run_dir), []).append(log_history(run_dir))
    out.parent.mkdir(parents=True, exist_ok=True)
    curves_figure(runs).savefig(out, dpi=110)
    return out
