"""``poly-epo judge-agreement``: do two judges cluster the same groups the same way, and what does each cost?

    poly-epo judge-agreement --config recipes/tiny/eval/config_demo.yaml --samples outputs/tiny/eval/warm_start \\
        --judges sum_pair answer distinct embedding
    poly-epo judge-agreement --config recipes/Qwen3-4B-Base/eval/config_math500.yaml --max_problems 64 \\
        --judges answer embedding openai --judge_base_url http://127.0.0.1:8001/v1

Groups are a ``poly-epo eval`` checkpoint folder's samples (``--samples``) on the recipe's rows, a training run's
audit trail (``--judged_groups``: the groups it trained on, with the labels its judge gave them as one more labeling,
``recorded``, and its audit judge's as ``audit:<judge>`` on the groups it audited), or are drawn from the recipe's
first checkpoint. Every judge clusters every group; for each pair of judges the mean adjusted Rand index over groups
and the share of completions both call degenerate or both not, each with a bootstrap interval over groups; for each
judge its seconds and tokens per group. Writes agreement.json and agreement.png to output_dir.
"""

from __future__ import annotations

import itertools
import json
import logging
import time
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import numpy as np

from poly_epo_trl.assembly import AgreementArguments, assemble_agreement, parse_and_run
from poly_epo_trl.constants import DEGENERATE_CLUSTER_ID
from poly_epo_trl.evaluation.metrics import adjusted_rand_index
from poly_epo_trl.evaluation.report import bootstrap_mean, format_interval
from poly_epo_trl.recipe import RecipeError, parse_recipe

logger = logging.getLogger(__name__)


def labeling(labels: list[list[int] | None], seconds: float, tokens: float, groups: int) -> dict[str, Any]:
    """One labeling's entry in the report: its labels, failures, cost per group, clusters and degenerate share."""
    judged = [x for x in labels if x is not None]
    flat = [c for x in judged for c in x]
    return {
        "labels": labels,
        "failed_groups": len(labels) - len(judged),
        "seconds_per_group": seconds / groups,
        "tokens_per_group": tokens / groups,
        "clusters_per_group": float(np.mean([len(set(x) - {DEGENERATE_CLUSTER_ID}) for x in judged or [[]]])),
        "degenerate_frac": flat.count(DEGENERATE_CLUSTER_ID) / len(flat) if flat else 0.0,
    }


def judge_all(args: AgreementArguments, groups: list[tuple[str, list[str]]]) -> dict[str, dict[str, Any]]:
    """Each judge's labels per group (None where it failed: no fallback here) and its cost."""
    out = {}
    for spec in args.judges:
        try:
            judge = replace(args.judge_spec(text=spec), fallback="skip").build()
        except (ValueError, ImportError) as error:
            raise RecipeError(f"judges: {spec!r}: {error}") from None
        start = time.perf_counter()
        labels = judge.cluster_groups(groups)
        seconds = time.perf_counter() - start
        stats = judge.pop_stats()
        tokens = stats.get("prompt_tokens", 0) + stats.get("completion_tokens", 0)
        out[spec] = labeling(labels, seconds, tokens, len(groups))
        logger.info("%s: %d groups in %.1fs, %d failed", spec, len(groups), seconds, out[spec]["failed_groups"])
    return out


def degenerate_agreement(a: list[int], b: list[int]) -> float:
    """The share of completions that both labelings call degenerate, or both do not."""
    return float(
        np.mean([(x == DEGENERATE_CLUSTER_ID) == (y == DEGENERATE_CLUSTER_ID) for x, y in zip(a, b, strict=True)])
    )


def pairwise(judged: dict[str, dict[str, Any]], bootstrap: int, confidence: float, seed: int) -> list[dict]:
    """ARI and degenerate agreement of each pair of judges over the groups both judged, with bootstrap intervals."""
    out = []
    for a, b in itertools.combinations(judged, 2):
        both = [(x, y) for x, y in zip(judged[a]["labels"], judged[b]["labels"], strict=True) if x and y]
        entry: dict[str, Any] = {"judges": [a, b], "groups": len(both)}
        if both:
            ari = np.array([adjusted_rand_index(x, y) for x, y in both])
            same = np.array([degenerate_agreement(x, y) for x, y in both])
            for name, values in (("ari", ari), ("degenerate_agreement", same)):
                mean, low, high = bootstrap_mean(values, bootstrap, confidence, seed)
                entry[name] = {"mean": float(mean), "low": float(low), "high": float(high)}
        out.append(entry)
    return out


def figure(names: list[str], pairs: list[dict], path: Path) -> None:
    """The ARI matrix as a heatmap (1 on the diagonal)."""
    matrix = np.eye(len(names))
    for p in pairs:
        i, j = (names.index(n) for n in p["judges"])
        matrix[i, j] = matrix[j, i] = p["ari"]["mean"] if "ari" in p else np.nan
    from matplotlib.figure import Figure  # loaded when the figure is drawn

    fig = Figure(figsize=(1.2 * len(names) + 2.5, 1.0 * len(names) + 1.8))
    ax = fig.add_subplot(1, 1, 1)
    image = ax.imshow(matrix, vmin=-0.2, vmax=1, cmap="viridis")
    ax.set_xticks(range(len(names)), names, rotation=30, ha="right", fontsize=8)
    ax.set_yticks(range(len(names)), names, fontsize=8)
    for (i, j), value in np.ndenumerate(matrix):
        ax.text(j, i, f"{value:.2f}", ha="center", va="center", color="w" if value < 0.6 else "k", fontsize=8)
    ax.set_title("adjusted Rand index between judges (mean over groups)", fontsize=9)
    fig.colorbar(image, ax=ax)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def run(args: AgreementArguments) -> dict[str, Any]:
    parts = assemble_agreement(args)
    groups = parts.groups
    recorded = {}
    if parts.recorded is not None:
        recorded["recorded"] = labeling(parts.recorded, parts.recorded_seconds, 0, len(groups))
    if parts.audited is not None:
        audited = sum(labels is not None for labels in parts.audited)
        recorded[f"audit:{parts.audit_judge}"] = labeling(parts.audited, parts.audited_seconds, 0, max(audited, 1))
    judged = {**recorded, **judge_all(args, groups)}
    pairs = pairwise(judged, args.bootstrap, args.confidence, args.seed)
    out = Path(args.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    report = {"settings": asdict(args), "groups": len(groups), "judges": judged, "pairs": pairs}
    (out / "agreement.json").write_text(json.dumps(report, indent=1))
    figure(list(judged), pairs, out / "agreement.png")
    return report


def format_report(report: dict[str, Any]) -> str:
    level = f"{report['settings']['confidence']:.0%}"
    lines = [f"{report['groups']} groups; intervals: {level} bootstrap over groups", ""]
    lines.append(f"{'judge':<28}{'s/group':>10}{'tokens/group':>14}{'clusters':>10}{'degenerate':>12}{'failed':>8}")
    for name, j in report["judges"].items():
        lines.append(
            f"{name:<28}{j['seconds_per_group']:>10.3f}{j['tokens_per_group']:>14.0f}{j['clusters_per_group']:>10.2f}"
            f"{j['degenerate_frac']:>12.3f}{j['failed_groups']:>8}"
        )
    lines += ["", f"{'pair':<44}{'ARI':>24}{'degenerate agreement':>26}"]
    for p in report["pairs"]:
        cells = [format_interval(p.get(k), 3) for k in ("ari", "degenerate_agreement")]
        lines.append(f"{' vs '.join(p['judges']):<44}{cells[0]:>24}{cells[1]:>26}")
    return "\n".join(lines)


def parse(argv: list[str] | None = None) -> AgreementArguments:
    (args,) = parse_recipe((AgreementArguments,), argv)
    return args


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args, report = parse_and_run(parse, run, argv)
    print(format_report(report))
    print(f"wrote {Path(args.output_dir) / 'agreement.json'} and agreement.png")
    return report


if __name__ == "__main__":
    main()
