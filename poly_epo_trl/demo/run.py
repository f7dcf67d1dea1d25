"""The CPU demo: GRPO, GRPO+DIV and Poly-EPO from the same warm start, same settings but the advantage.

    python -m poly_epo_trl.demo                      # defaults: 1 seed, the three methods
    python -m poly_epo_trl.demo --seeds 0 1 2 --steps 300

Writes results.json and demo.png (distinct correct answers over training, pass@k on held-out prompts) to --out.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import statistics
import time
import warnings
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import torch
from datasets import Dataset
from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback
from transformers.trainer_callback import PrinterCallback
from trl import GRPOTrainer

from ..evaluation.metrics import answer_diversity, pass_at_k, powers_of_two_up_to
from ..tasks.sum_pair import (
    DEFAULT_ASSET,
    HELD_OUT_TOTALS,
    TRAIN_TOTALS,
    is_correct,
    make_prompt,
    pair_judge,
    parse_pair,
    sum_pair_reward,
)
from ..trainer import GRPODivTrainer, PolyEPOConfig, PolyEPOTrainer

METHODS = ("grpo", "grpo_div", "poly_epo")
LABELS = {"grpo": "GRPO (Dr.GRPO)", "grpo_div": "GRPO+DIV", "poly_epo": "Poly-EPO"}
COLORS = {"grpo": "tab:red", "grpo_div": "tab:orange", "poly_epo": "tab:blue"}


@dataclass
class DemoSettings:
    steps: int = 200
    learning_rate: float = 6e-4
    prompts_per_step: int = 8
    num_generations: int = 8
    set_size: int = 4
    diversity_coef: float = 0.5
    eval_samples: int = 32
    curve_samples: int = 16
    curve_every: int = 25
    checkpoint: str = str(DEFAULT_ASSET)
    methods: list[str] = field(default_factory=lambda: list(METHODS))
    seeds: list[int] = field(default_factory=lambda: [0])


def sample_completions(model, tokenizer, totals, num_samples: int, seed: int) -> list[list[str]]:
    """num_samples completions per prompt at temperature 1, without touching the global RNG stream."""
    model.eval()
    prompts = [make_prompt(s) for s in totals]
    encoded = tokenizer(prompts, return_tensors="pt", padding=True)
    with torch.random.fork_rng(), torch.no_grad():
        torch.manual_seed(seed)
        output = model.generate(
            **encoded,
            do_sample=True,
            temperature=1.0,
            top_k=0,
            top_p=1.0,
            max_new_tokens=6,
            num_return_sequences=num_samples,
            pad_token_id=tokenizer.pad_token_id,
        )
    texts = tokenizer.batch_decode(output[:, encoded["input_ids"].shape[1] :], skip_special_tokens=True)
    return [texts[i * num_samples : (i + 1) * num_samples] for i in range(len(prompts))]


def evaluate(model, tokenizer, totals, num_samples: int, seed: int) -> dict[str, Any]:
    """pass@k for k = 1, 2, 4, ..., num_samples and answer diversity, averaged over the prompts."""
    groups = sample_completions(model, tokenizer, totals, num_samples, seed)
    ks = powers_of_two_up_to(num_samples)
    per_prompt = []
    for total, completions in zip(totals, groups, strict=True):
        prompt = make_prompt(total)
        correct = [parse_pair(c) for c in completions if is_correct(prompt, c)]
        stats = answer_diversity(correct, num_samples)
        stats["pass_at_k"] = [pass_at_k(num_samples, len(correct), k) for k in ks]
        per_prompt.append(stats)
    result = {key: statistics.fmean(p[key] for p in per_prompt) for key in per_prompt[0] if key != "pass_at_k"}
    result["ks"] = ks
    result["pass_at_k"] = [statistics.fmean(p["pass_at_k"][i] for p in per_prompt) for i in range(len(ks))]
    result["pass_at_1"] = result["pass_at_k"][0]
    return result


class DiversityCurve(TrainerCallback):
    """Evaluates on the held-out prompts every ``every`` steps: distinct correct answers and pass@1."""

    def __init__(self, tokenizer, every: int, num_samples: int, seed: int, progress: str) -> None:
        self.tokenizer, self.every, self.num_samples, self.seed, self.progress = (
            tokenizer,
            every,
            num_samples,
            seed,
            progress,
        )
        self.points: list[dict[str, float]] = []
        self.start = time.perf_counter()

    def record(self, model, step: int) -> None:
        was_training = model.training
        stats = evaluate(model, self.tokenizer, HELD_OUT_TOTALS, self.num_samples, self.seed + 10_000 + step)
        model.train(was_training)
        self.points.append(
            {"step": step, "distinct_correct": stats["distinct_correct"], "pass_at_1": stats["pass_at_1"]}
        )
        elapsed = time.perf_counter() - self.start
        print(
            f"  [{self.progress}] step {step:>4}: pass@1 {stats['pass_at_1']:.3f}, "
            f"distinct correct {stats['distinct_correct']:.2f} / {self.num_samples}  ({elapsed:.0f}s)",
            flush=True,
        )

    def on_train_begin(self, args, state, control, model=None, **kwargs):
        self.record(model, 0)

    def on_step_end(self, args, state, control, model=None, **kwargs):
        if state.global_step % self.every == 0:
            self.record(model, state.global_step)


def train_method(method: str, seed: int, settings: DemoSettings, out: Path, progress: str) -> dict[str, Any]:
    """RL from the warm start with one method; returns the curve and the final held-out evaluation."""
    tokenizer = AutoTokenizer.from_pretrained(settings.checkpoint)
    model = AutoModelForCausalLM.from_pretrained(settings.checkpoint)
    args = PolyEPOConfig(
        output_dir=str(out / "runs" / f"{method}-seed{seed}"),
        per_device_train_batch_size=settings.prompts_per_step * settings.num_generations,
        num_generations=settings.num_generations,
        set_size=settings.set_size,
        diversity_coef=settings.diversity_coef,
        max_completion_length=6,
        max_steps=settings.steps,
        learning_rate=settings.learning_rate,
        lr_scheduler_type="constant",
        logging_steps=max(settings.steps // 4, 1),
        report_to="none",
        save_strategy="no",
        use_cpu=True,
        bf16=False,
        activation_checkpointing=False,
        seed=seed,
        data_seed=seed,
        disable_tqdm=True,
        log_level="error",
    )
    dataset = Dataset.from_dict({"prompt": [make_prompt(s) for s in TRAIN_TOTALS]})
    curve = DiversityCurve(tokenizer, settings.curve_every, settings.curve_samples, seed, progress)
    common = dict(
        model=model, reward_funcs=sum_pair_reward, args=args, train_dataset=dataset, processing_class=tokenizer
    )
    if method == "grpo":
        trainer = GRPOTrainer(**common, callbacks=[curve])
    elif method == "grpo_div":
        trainer = GRPODivTrainer(**common, callbacks=[curve], judge=pair_judge)
    else:
        trainer = PolyEPOTrainer(**common, callbacks=[curve], judge=pair_judge)
    trainer.remove_callback(PrinterCallback)  # the curve callback reports progress instead of raw log dicts
    start = time.perf_counter()
    trainer.train()
    if not curve.points or curve.points[-1]["step"] != settings.steps:
        curve.record(trainer.model, settings.steps)
    final = evaluate(trainer.model, tokenizer, HELD_OUT_TOTALS, settings.eval_samples, seed + 20_000)
    return {"curve": curve.points, "final": final, "train_seconds": time.perf_counter() - start}


def summarise(results: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Mean and range over seeds of each method's final metrics."""
    summary = {}
    for method, by_seed in results.items():
        finals = [run["final"] for run in by_seed.values()]
        entry = {}
        for key in ("pass_at_1", "distinct_correct", "effective_answers", "top_answer_share"):
            values = [f[key] for f in finals]
            entry[key] = {"mean": statistics.fmean(values), "min": min(values), "max": max(values)}
        entry["ks"] = finals[0]["ks"]
        entry["pass_at_k"] = [statistics.fmean(f["pass_at_k"][i] for f in finals) for i in range(len(entry["ks"]))]
        summary[method] = entry
    return summary


def format_table(summary: dict[str, dict[str, Any]], warm: dict[str, Any]) -> str:
    ks = warm["ks"]
    big_k = ks[-1]
    header = (
        f"{'method':<16}{'pass@1':>16}{f'pass@{big_k}':>10}{'distinct correct':>26}{'effective':>12}{'top share':>11}"
    )
    rows = [header, "-" * len(header)]
    rows.append(
        f"{'warm start':<16}{warm['pass_at_1']:>16.3f}{warm['pass_at_k'][-1]:>10.3f}{warm['distinct_correct']:>26.2f}"
        f"{warm['effective_answers']:>12.2f}{warm['top_answer_share']:>11.3f}"
    )
    for method, entry in summary.items():

        def cell(key: str, digits: int, entry=entry) -> str:
            v = entry[key]
            return f"{v['mean']:.{digits}f} ({v['min']:.{digits}f}-{v['max']:.{digits}f})"

        rows.append(
            f"{LABELS[method]:<16}{cell('pass_at_1', 3):>16}{entry['pass_at_k'][-1]:>10.3f}"
            f"{cell('distinct_correct', 2):>26}{entry['effective_answers']['mean']:>12.2f}"
            f"{entry['top_answer_share']['mean']:>11.3f}"
        )
    return "\n".join(rows)


def plot(results: dict[str, dict[str, Any]], summary: dict[str, dict[str, Any]], warm: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    for method, by_seed in results.items():
        for i, run in enumerate(by_seed.values()):
            steps = [p["step"] for p in run["curve"]]
            values = [p["distinct_correct"] for p in run["curve"]]
            left.plot(steps, values, color=COLORS[method], alpha=0.9, label=LABELS[method] if i == 0 else None)
        right.plot(
            summary[method]["ks"], summary[method]["pass_at_k"], "o-", color=COLORS[method], label=LABELS[method]
        )
    right.plot(warm["ks"], warm["pass_at_k"], "s--", color="gray", label="warm start")
    left.set(
        xlabel="training step", ylabel="distinct correct answers per prompt", title="Diversity on held-out prompts"
    )
    right.set(xscale="log", xlabel="k", ylabel="pass@k", title="pass@k on held-out prompts")
    right.set_xticks(warm["ks"], [str(k) for k in warm["ks"]])
    for ax in (left, right):
        ax.grid(alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def run_demo(settings: DemoSettings, out: Path) -> dict[str, Any]:
    """Train every method for every seed, evaluate, and write results.json and demo.png under ``out``."""
    for method in settings.methods:
        if method not in METHODS:
            raise ValueError(f"Unknown method {method!r}: use any of {METHODS}.")
    if not Path(settings.checkpoint, "config.json").exists():
        raise FileNotFoundError(
            f"No warm-start checkpoint at {settings.checkpoint}: regenerate it with "
            "`python -m poly_epo_trl.tasks.sum_pair.warm_start --out <dir>` and pass --checkpoint <dir>."
        )
    out.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(1)
    tokenizer = AutoTokenizer.from_pretrained(settings.checkpoint)
    warm = evaluate(
        AutoModelForCausalLM.from_pretrained(settings.checkpoint),
        tokenizer,
        HELD_OUT_TOTALS,
        settings.eval_samples,
        20_000,
    )
    print(
        f"warm start on {len(HELD_OUT_TOTALS)} held-out prompts: pass@1 {warm['pass_at_1']:.3f}, "
        f"distinct correct {warm['distinct_correct']:.2f} of {settings.eval_samples} samples",
        flush=True,
    )
    results: dict[str, dict[str, Any]] = {m: {} for m in settings.methods}
    start = time.perf_counter()
    runs = [(seed, method) for seed in settings.seeds for method in settings.methods]
    for i, (seed, method) in enumerate(runs, 1):
        progress = f"{i}/{len(runs)} {LABELS[method]}, seed {seed}"
        print(f"training {progress}", flush=True)
        results[method][str(seed)] = train_method(method, seed, settings, out, progress)
    summary = summarise(results)
    report = {"settings": asdict(settings), "warm_start": warm, "summary": summary, "runs": results}
    report["seconds"] = time.perf_counter() - start
    if "grpo" in summary and "poly_epo" in summary:
        grpo, poly = summary["grpo"], summary["poly_epo"]
        report["distinct_ratio_poly_epo_vs_grpo"] = poly["distinct_correct"]["mean"] / max(
            grpo["distinct_correct"]["mean"], 1e-9
        )
        report["pass_at_1_gap_points"] = 100 * (poly["pass_at_1"]["mean"] - grpo["pass_at_1"]["mean"])
    (out / "results.json").write_text(json.dumps(report, indent=2))
    plot(results, summary, warm, out / "demo.png")
    print()
    print(f"held-out prompts: {len(HELD_OUT_TOTALS)}, {settings.eval_samples} samples each; seeds {settings.seeds}")
    print(format_table(summary, warm))
    if "distinct_ratio_poly_epo_vs_grpo" in report:
        print(
            f"\nPoly-EPO / GRPO distinct correct answers: {report['distinct_ratio_poly_epo_vs_grpo']:.2f}x; "
            f"pass@1 difference {report['pass_at_1_gap_points']:+.1f} points"
        )
    print(f"wrote {out / 'results.json'} and {out / 'demo.png'} in {report['seconds']:.0f}s")
    return report


def parse_args(argv: list[str] | None = None) -> tuple[DemoSettings, Path]:
    defaults = DemoSettings()
    parser = argparse.ArgumentParser(description="GRPO vs GRPO+DIV vs Poly-EPO on a toy task, on CPU.")
    parser.add_argument("--out", type=Path, default=Path("outputs/demo"))
    parser.add_argument("--seeds", type=int, nargs="+", default=defaults.seeds)
    parser.add_argument("--methods", nargs="+", default=defaults.methods, choices=METHODS)
    parser.add_argument("--steps", type=int, default=defaults.steps)
    parser.add_argument("--learning-rate", type=float, default=defaults.learning_rate)
    parser.add_argument("--prompts-per-step", type=int, default=defaults.prompts_per_step)
    parser.add_argument("--eval-samples", type=int, default=defaults.eval_samples)
    parser.add_argument("--curve-every", type=int, default=defaults.curve_every)
    parser.add_argument("--curve-samples", type=int, default=defaults.curve_samples)
    parser.add_argument("--diversity-coef", type=float, default=defaults.diversity_coef)
    parser.add_argument("--checkpoint", default=defaults.checkpoint)
    args = parser.parse_args(argv)
    settings = DemoSettings(**{f.name: getattr(args, f.name) for f in fields(DemoSettings) if hasattr(args, f.name)})
    return settings, args.out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    logging.getLogger("transformers").setLevel(logging.ERROR)
    warnings.filterwarnings("ignore", category=FutureWarning)
    warnings.filterwarnings("ignore", category=UserWarning)
    settings, out = parse_args(argv)
    if not math.isfinite(settings.learning_rate) or settings.learning_rate <= 0:
        raise SystemExit("--learning-rate must be a positive number.")
    return run_demo(settings, out)
