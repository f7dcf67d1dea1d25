"""The CPU agent example: GRPO and Poly-EPO train a tiny tool-calling agent through ``environment_factory``.

    python -m poly_epo_trl.demo.agent                    # 1 seed, GRPO and Poly-EPO, about 9 minutes
    python -m poly_epo_trl.demo.agent --seeds 0 1 2 3 4

The task (``tasks.goldbach_agent``): asked for ``S=<S>:``, the agent calls ``submit(p, q)`` on a
``GoldbachEnvironment``, which owns the reward (1 when p and q are primes summing to S). Its plan is the pair it
submits; the judge clusters trajectories by plan. Both methods start from the task's warm start and differ only in
the trainer. Held-out sums are played as training plays them (the same environment, tool calls parsed by TRL's
parser, up to ``max_turns`` model turns), ``eval_samples`` episodes each; the report has pass@k and the distinct
successful plans per problem, over seeds, like the demo's. Writes results.json and agent.png to --out.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import time
import warnings
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import datasets
import torch
import transformers
from transformers import (
    AutoModelForCausalLM,
    AutoTokenizer,
    PreTrainedModel,
    PreTrainedTokenizerBase,
    PrinterCallback,
    ProgressCallback,
    TrainerCallback,
)
from trl.chat_template_utils import add_response_schema, parse_response

from ..evaluation.plots import training_figure
from ..evaluation.report import across_seeds, format_table, problem_metrics, seeds_interval, summarize
from ..tasks.goldbach_agent import GoldbachEnvironment, make_prompt, plan_judge, rows, submitted_pair
from ..tasks.sum_pair import HELD_OUT_TOTALS
from ..trainer import FiniteRewardsGRPOTrainer, PolyEPOConfig, PolyEPOTrainer
from .run import COLORS, LABELS, poly_epo_vs_grpo

METHODS = ("grpo", "poly_epo")
TRAINERS = {"grpo": FiniteRewardsGRPOTrainer, "poly_epo": PolyEPOTrainer}


@dataclass
class AgentSettings:
    steps: int = 150
    learning_rate: float = 6e-4
    prompts_per_step: int = 8
    num_generations: int = 8
    set_size: int = 4
    max_turns: int = 2  # model turns per episode: a submit call, then the last word
    eval_samples: int = 32
    curve_samples: int = 8
    curve_every: int = 50
    checkpoint: str | None = None
    methods: list[str] = field(default_factory=lambda: list(METHODS))
    seeds: list[int] = field(default_factory=lambda: [0])


def play(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    total: int,
    episodes: int,
    max_turns: int,
    max_new_tokens: int = 48,
) -> list[tuple[list[dict], float]]:
    """``episodes`` (trajectory, reward) pairs of the policy on the sum ``total``, each against its own environment,
    as TRL's tool loop plays them with ``max_tool_calling_iterations = max_turns - 1``: sample a turn (temperature
    1), parse it with TRL's parser; while turns are left, run its tool calls, append their results and sample the
    next turn; stop at a turn without tool calls."""
    environments = [GoldbachEnvironment() for _ in range(episodes)]
    for environment in environments:
        environment.reset(total=total)
    tools = [environments[0].submit]
    prompt = make_prompt(total)
    trajectories: list[list[dict]] = [[] for _ in range(episodes)]
    active = list(range(episodes))
    for turn in range(max_turns):
        if not active:
            break
        rendered = [
            tokenizer.apply_chat_template(
                prompt + trajectories[i], tools=tools, add_generation_prompt=True, tokenize=True, return_dict=False
            )
            for i in active
        ]
        width = max(len(r) for r in rendered)
        input_ids = torch.tensor([[tokenizer.pad_token_id] * (width - len(r)) + r for r in rendered])
        attention = (torch.arange(width) >= torch.tensor([width - len(r) for r in rendered])[:, None]).long()
        with torch.no_grad():
            output = model.generate(
                input_ids=input_ids,
                attention_mask=attention,
                do_sample=True,
                temperature=1.0,
                top_k=0,
                top_p=1.0,
                max_new_tokens=max_new_tokens,
                pad_token_id=tokenizer.pad_token_id,
            )
        still = []
        for row, (i, prefix) in enumerate(zip(active, rendered, strict=True)):
            ids = [t for t in output[row, width:].tolist() if t != tokenizer.pad_token_id]
            message = parse_response(tokenizer, ids, prefix=prefix, tools=tools)
            trajectories[i].append(message)
            calls = message.get("tool_calls") or [] if turn < max_turns - 1 else []
            for call in calls:
                function = call.get("function", {})
                trajectories[i].append(
                    {"role": "tool", "name": function.get("name", ""), "content": run_tool(environments[i], function)}
                )
            if calls:
                still.append(i)
        active = still
    return [(t, e.get_reward()) for t, e in zip(trajectories, environments, strict=True)]


def run_tool(environment: GoldbachEnvironment, function: dict) -> str:
    """A tool call's result, or the error TRL would show the model."""
    if function.get("name") != "submit":
        return f"error: unknown tool {function.get('name')!r}"
    try:
        return str(environment.submit(**function.get("arguments", {})))
    except (TypeError, ValueError) as error:
        return f"error: {error}"


def evaluate(
    model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, samples: int, max_turns: int, seed: int
) -> dict[str, Any]:
    """``evaluation``'s summary of ``samples`` episodes on each held-out sum: pass@k, distinct successful plans."""
    torch.manual_seed(seed)
    was_training = model.training
    model.eval()
    problems = []
    for total in HELD_OUT_TOTALS:
        played = play(model, tokenizer, total, samples, max_turns)
        trajectories, rewards = [t for t, _ in played], [r for _, r in played]
        answers = [submitted_pair(t) for t in trajectories]
        problems.append(problem_metrics(rewards, answers, plan_judge("", trajectories), seed=total))
    model.train(was_training)
    return summarize(problems, num_resamples=200)


class HeldOutCurve(TrainerCallback):
    """At step 0, every ``curve_every`` steps and at the end, the distinct successful plans per held-out sum."""

    def __init__(self, tokenizer: PreTrainedTokenizerBase, s: AgentSettings, seed: int) -> None:
        self.tokenizer, self.s, self.seed, self.points = tokenizer, s, seed, []

    def record(self, model: PreTrainedModel, step: int) -> None:
        summary = evaluate(model, self.tokenizer, self.s.curve_samples, self.s.max_turns, self.seed)
        self.points.append((step, summary["distinct_correct_clusters"]["mean"]))

    def on_train_begin(self, args, state, control, model=None, **kwargs):
        self.record(model, 0)

    def on_step_end(self, args, state, control, model=None, **kwargs):
        if state.global_step % self.s.curve_every == 0:
            self.record(model, state.global_step)

    def on_train_end(self, args, state, control, model=None, **kwargs):
        if self.points[-1][0] != state.global_step:
            self.record(model, state.global_step)


def warm_start_path(s: AgentSettings) -> str:
    from ..models import resolve_model

    return resolve_model(s.checkpoint or "builtin:goldbach_agent")


def train_method(method: str, seed: int, s: AgentSettings, out: Path) -> dict[str, Any]:
    """One method from the warm start through ``environment_factory``; its curve and final evaluation."""
    path = warm_start_path(s)
    tokenizer = add_response_schema(AutoTokenizer.from_pretrained(path))
    config = PolyEPOConfig(
        output_dir=str(out / "runs" / f"{method}-seed{seed}"),
        seed=seed,
        data_seed=seed,
        per_device_train_batch_size=s.prompts_per_step * s.num_generations,
        num_generations=s.num_generations,
        set_size=s.set_size,
        max_steps=s.steps,
        learning_rate=s.learning_rate,
        lr_scheduler_type="constant",
        max_completion_length=128,
        max_tool_calling_iterations=s.max_turns - 1,
        judge="goldbach_agent",
        logging_steps=max(s.steps // 4, 1),
        report_to="none",
        save_strategy="no",
        use_cpu=True,
        bf16=False,
        disable_tqdm=True,
        log_level="error",
    )
    kwargs = {"judge": config.judge} if method != "grpo" else {}
    trainer = TRAINERS[method](
        model=path,
        args=config,
        train_dataset=rows("train"),
        processing_class=tokenizer,
        environment_factory=GoldbachEnvironment,
        **kwargs,
    )
    curve = HeldOutCurve(tokenizer, s, seed)
    trainer.add_callback(curve)
    trainer.remove_callback(PrinterCallback)
    trainer.remove_callback(ProgressCallback)
    start = time.perf_counter()
    trainer.train()
    seconds = time.perf_counter() - start
    final = evaluate(trainer.model, tokenizer, s.eval_samples, s.max_turns, seed)
    return {"curve": curve.points, "final": final, "train_seconds": seconds}


def run_agent_demo(s: AgentSettings, out: Path) -> dict[str, Any]:
    """Every method for every seed; results.json and agent.png under ``out``."""
    torch.set_num_threads(1)
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    path = warm_start_path(s)
    model, tokenizer = AutoModelForCausalLM.from_pretrained(path), AutoTokenizer.from_pretrained(path)
    add_response_schema(tokenizer)
    warm = {str(seed): evaluate(model, tokenizer, s.eval_samples, s.max_turns, seed) for seed in s.seeds}
    runs: dict[str, dict[str, Any]] = {m: {} for m in s.methods}
    todo = [(seed, m) for seed in s.seeds for m in s.methods]
    for i, (seed, method) in enumerate(todo, 1):
        print(f"training {i}/{len(todo)} {LABELS[method]}, seed {seed}", flush=True)
        runs[method][str(seed)] = train_method(method, seed, s, out)
    finals = {"warm": list(warm.values())} | {m: [run["final"] for run in runs[m].values()] for m in s.methods}
    summary = {LABELS[m]: across_seeds(values) for m, values in finals.items()}
    report: dict[str, Any] = {"settings": asdict(s), "warm_start": warm, "summary": summary, "runs": runs}
    report.update(poly_epo_vs_grpo(summary))
    report["seconds"] = time.perf_counter() - start
    (out / "results.json").write_text(json.dumps(report, indent=2))
    curves = {LABELS[m]: [run["curve"] for run in by_seed.values()] for m, by_seed in runs.items()}
    band = seeds_interval(len(s.seeds))
    figure = training_figure(curves, "distinct successful plans", summary, band, COLORS)
    figure.savefig(out / "agent.png", dpi=110)
    n = s.eval_samples
    what = f"mean [{band}]" if len(s.seeds) > 1 else band
    print(f"\ngoldbach_agent: {len(HELD_OUT_TOTALS)} held-out sums, {n} episodes each; seeds {s.seeds} ({what})")
    print(format_table(summary, first=""))
    print()
    at_n = ", ".join(f"{label} {stats['pass_at_k']['mean'][-1]:.3f}" for label, stats in summary.items())
    print(f"pass@{n} (sums solved within {n} episodes): {at_n}")
    if "distinct_ratio_poly_epo_vs_grpo" in report:
        print(
            f"Poly-EPO / GRPO distinct successful plans: {report['distinct_ratio_poly_epo_vs_grpo']:.2f}x; "
            f"pass@1 difference {report['pass_at_1_gap_points']:+.1f} points"
        )
    print(f"figure: {out / 'agent.png'}   numbers: {out / 'results.json'}   ({report['seconds']:.0f} s)")
    return report


def parse_args(argv: list[str] | None = None) -> tuple[AgentSettings, Path]:
    defaults = AgentSettings()
    parser = argparse.ArgumentParser(description="GRPO vs Poly-EPO on a tiny tool-calling agent, on CPU.")
    parser.add_argument("--out", type=Path, default=Path("outputs/agent"))
    parser.add_argument("--seeds", type=int, nargs="+", default=defaults.seeds)
    parser.add_argument("--methods", nargs="+", default=defaults.methods, choices=METHODS)
    parser.add_argument("--checkpoint", default=None, help="a warm start other than the task's")
    for name in ("steps", "learning_rate", "prompts_per_step", "num_generations", "set_size", "max_turns",
                 "eval_samples", "curve_samples", "curve_every"):  # fmt: skip
        value = getattr(defaults, name)
        parser.add_argument(f"--{name.replace('_', '-')}", type=type(value), default=value)
    args = parser.parse_args(argv)
    return AgentSettings(**{f.name: getattr(args, f.name) for f in fields(AgentSettings)}), args.out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    logging.basicConfig(level=logging.WARNING, format="  %(message)s")
    logging.getLogger("transformers").setLevel(logging.ERROR)
    datasets.disable_progress_bars()
    transformers.utils.logging.disable_progress_bar()
    warnings.filterwarnings("ignore", category=FutureWarning)
    warnings.filterwarnings("ignore", category=UserWarning)
    settings, out = parse_args(argv)
    return run_agent_demo(settings, out)


if __name__ == "__main__":
    main()
