"""Evaluation entry point: pass@k, majority vote and strategy diversity of one or more checkpoints, with plots.

    python -m poly_epo_trl.eval --model_name_or_path grpo=outputs/grpo poly_epo=outputs/poly_epo \\
        --dataset_name data/test.jsonl --num_samples 64 --output_dir outputs/eval
    poly-epo eval --config recipes/tiny/eval/config_demo.yaml
    poly-epo eval --config recipes/tiny/eval/config_agent_cpu.yaml    # an agent: episodes with its environment

Writes ``<output_dir>/report.json``, ``report.png`` and one PNG per panel; each checkpoint's samples and scores
live in ``<output_dir>/<label>/`` so a killed run resumes where it stopped, without resampling anything.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from functools import partial
from pathlib import Path
from typing import Any

from poly_epo_trl.assembly import EvalArguments, assemble_evaluation, parse_and_run
from poly_epo_trl.evaluation.plots import plot_report
from poly_epo_trl.evaluation.report import format_interval, format_table, paired_comparisons, summarize
from poly_epo_trl.evaluation.runner import evaluate_checkpoint
from poly_epo_trl.evaluation.store import SampleStore
from poly_epo_trl.files import atomic_write_text
from poly_epo_trl.recipe import RecipeError, parse_recipe

RESUMES = (
    "\nWhat was sampled and scored so far is kept in output_dir: the same command resumes from there (judge_fallback "
    "chooses what a group the judge fails on becomes instead)."
)


def parse(argv: list[str] | None = None) -> EvalArguments:
    (args,) = parse_recipe((EvalArguments,), argv)
    return args


def run(args: EvalArguments) -> dict[str, Any]:
    """Evaluate every checkpoint; write the report and plots; return the report."""
    parts = assemble_evaluation(args)
    out = Path(args.output_dir)
    summaries: dict[str, dict[str, Any]] = {}
    problems: dict[str, list[dict[str, Any]]] = {}
    for label, path in parts.checkpoints:
        try:
            store = SampleStore(out / label, args.store_settings(path), args.overwrite)
        except ValueError as error:
            raise RecipeError(str(error)) from None
        problems[label] = evaluate_checkpoint(
            parts.rows,
            store,
            partial(parts.make_sampler, label, path),
            parts.scorer,
            chunk_size=args.chunk_size,
            correct_reward_threshold=args.correct_reward_threshold,
            maj_subsets=args.maj_subsets,
            label=label,
            episodes=bool(parts.agent),
        )
        summaries[label] = summarize(problems[label], args.bootstrap, args.confidence, args.seed)
    report = {
        "settings": asdict(args),
        "summaries": summaries,
        "bands": f"{args.confidence:.0%} percentile bootstrap over problems (one checkpoint: no seed spread in it)",
        "comparisons": paired_comparisons(problems, args.confidence),
        "comparisons_are": f"{args.confidence:.0%} t intervals of per-problem differences, paired on problems",
        "problems": problems,
    }
    atomic_write_text(out / "report.json", json.dumps(report, indent=1))
    report["plots"] = [str(p) for p in plot_report(summaries, out)]
    return report


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args, report = parse_and_run(parse, run, argv, RESUMES)
    print(format_table(report["summaries"]))
    print(f"bands: {report['bands']}")
    for pair, stats in report["comparisons"].items():
        cells = ", ".join(f"{name} {format_interval(stat, 3)}" for name, stat in stats.items())
        print(f"{pair} ({report['comparisons_are']}): {cells}")
    print(f"wrote {Path(args.output_dir) / 'report.json'} and {len(report['plots'])} plots")
    return report


if __name__ == "__main__":
    main()
