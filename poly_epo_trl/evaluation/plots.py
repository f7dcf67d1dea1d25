"""Figures of an evaluation report: several checkpoints on one figure (e.g. GRPO vs Poly-EPO)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # matplotlib loads when a figure is drawn, not with training
    from matplotlib.figure import Figure

PANELS = ("pass_at_k", "maj_at_k", "vote_share", "distinct_correct_clusters")
BOOTSTRAP = "95% bootstrap over problems"


def draw_training(
    ax: Any,
    runs: dict[str, list[list[tuple[int, float]]]],
    ylabel: str,
    colors: dict[str, str] | None = None,
    linestyles: dict[str, str] | None = None,
) -> None:
    """A metric over training steps: each name's runs (one per seed, the (step, value) points of its log
    history) as thin lines and their mean as a thick one."""
    for i, (name, curves) in enumerate(runs.items()):
        style = {"color": (colors or {}).get(name, f"C{i}"), "linestyle": (linestyles or {}).get(name, "-")}
        if len(curves) == 1:  # one seed: its curve is the mean
            ax.plot(*zip(*curves[0], strict=True), linewidth=2.2, label=f"{name} (1 seed)", **style)
            continue
        for curve in curves:
            ax.plot(*zip(*curve, strict=True), alpha=0.35, linewidth=1, **style)
        points = [dict(curve) for curve in curves]
        steps = sorted(set.intersection(*(set(p) for p in points)))
        mean = [sum(p[step] for p in points) / len(points) for step in steps]
        ax.plot(steps, mean, linewidth=2.2, label=f"{name} (mean of {len(curves)} seeds, thin: each)", **style)
    ax.set_xlabel("training step")
    ax.set_ylabel(ylabel)
    ax.set_title(f"{ylabel} on held-out problems", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)


def _curve(
    ax: Any, summaries: dict[str, dict[str, Any]], key: str, label: str, band: str, colors: dict[str, str]
) -> None:
    for name, s in summaries.items():
        if s.get(key) is None:
            continue
        line = ax.plot(s["ks"], s[key]["mean"], marker="o", label=name, color=colors.get(name))[0]
        ax.fill_between(s["ks"], s[key]["low"], s[key]["high"], color=line.get_color(), alpha=0.2)
    ax.set_xscale("log", base=2)
    ks = max((s["ks"] for s in summaries.values()), key=len)
    ax.set_xticks(ks, [str(k) for k in ks])
    ax.set_xlabel("k (samples per problem)")
    ax.set_ylabel(label)
    ax.set_title(f"{label} ({band})", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)


def _calibration(ax: Any, summaries: dict[str, dict[str, Any]]) -> None:
    for name, s in summaries.items():
        bins = s["vote_share_calibration"]
        centers = [(b["low"] + b["high"]) / 2 for b in bins]
        ax.plot(centers, [b["accuracy"] for b in bins], marker="o", label=name)
        for x, b in zip(centers, bins, strict=True):
            ax.annotate(str(b["count"]), (x, b["accuracy"]), fontsize=7, xytext=(3, 3), textcoords="offset points")
    ax.plot([0, 1], [0, 1], color="grey", linestyle=":", linewidth=1)
    ax.set_xlim(0, 1)
    ax.set_ylim(-0.05, 1.05)
    ax.set_xlabel("winning answer's vote share (all samples)")
    ax.set_ylabel("majority-vote accuracy")
    ax.set_title("majority vote vs vote share (labels: problems per bin)", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)


def _distinct(ax: Any, summaries: dict[str, dict[str, Any]], band: str) -> None:
    names = [n for n, s in summaries.items() if s.get("distinct_correct_clusters") is not None]
    stats = [summaries[n]["distinct_correct_clusters"] for n in names]
    means = [s["mean"] for s in stats]
    errors = [
        [m - s["low"] for m, s in zip(means, stats, strict=True)],
        [s["high"] - m for m, s in zip(means, stats, strict=True)],
    ]
    ax.bar(range(len(names)), means, yerr=errors, capsize=4, color=[f"C{i}" for i in range(len(names))])
    ax.set_xticks(range(len(names)), names, rotation=15, fontsize=8)
    ax.set_ylabel("distinct clusters among correct samples")
    ax.set_title(f"strategies per problem (mean, {band})", fontsize=9)
    ax.grid(alpha=0.3, axis="y")


def draw(
    ax: Any,
    panel: str,
    summaries: dict[str, dict[str, Any]],
    band: str = BOOTSTRAP,
    colors: dict[str, str] | None = None,
) -> None:
    """One panel of ``PANELS`` for every checkpoint's summary; ``band`` says what the intervals are."""
    if panel == "pass_at_k":
        _curve(ax, summaries, "pass_at_k", "pass@k", band, colors or {})
    elif panel == "maj_at_k":
        _curve(ax, summaries, "maj_at_k", "maj@k", band, colors or {})
    elif panel == "vote_share":
        _calibration(ax, summaries)
    elif panel == "distinct_correct_clusters":
        _distinct(ax, summaries, band)
    else:
        raise ValueError(f"Unknown panel {panel!r}: use one of {PANELS}.")


def report_figure(
    summaries: dict[str, dict[str, Any]], panels: tuple[str, ...] = PANELS, band: str = BOOTSTRAP
) -> Figure:
    """The panels side by side (no pyplot: safe in scripts, shown inline in notebooks)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(4.6 * len(panels), 4.2))
    for i, panel in enumerate(panels):
        draw(fig.add_subplot(1, len(panels), i + 1), panel, summaries, band)
    fig.tight_layout()
    return fig


def plot_report(summaries: dict[str, dict[str, Any]], out_dir: Path) -> list[Path]:
    """``report.png`` (all panels) and one PNG per panel; returns the paths written."""
    out_dir.mkdir(parents=True, exist_ok=True)
    has_clusters = any(s.get("distinct_correct_clusters") is not None for s in summaries.values())
    panels = tuple(p for p in PANELS if has_clusters or p != "distinct_correct_clusters")
    paths = [out_dir / "report.png", *(out_dir / f"{panel}.png" for panel in panels)]
    report_figure(summaries, panels).savefig(paths[0], dpi=120)
    for panel, path in zip(panels, paths[1:], strict=True):
        report_figure(summaries, (panel,)).savefig(path, dpi=120)
    return paths


def training_figure(
    curves: dict[str, list[list[tuple[int, float]]]],
    ylabel: str,
    summaries: dict[str, dict[str, Any]],
    band: str,
    colors: dict[str, str] | None = None,
) -> Figure:
    """A metric over training (``draw_training``) next to the final pass@k against k."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(11, 4.2))
    draw_training(fig.add_subplot(1, 2, 1), curves, ylabel, colors)
    draw(fig.add_subplot(1, 2, 2), "pass_at_k", summaries, band, colors)
    fig.tight_layout()
    return fig
