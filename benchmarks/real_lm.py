"""The paper's effect on a real pretrained LM: GRPO (Dr.GRPO), GRPO+DIV and Poly-EPO from one warm start of
SmolLM2-135M-Instruct on the names_by_letter task, over several seeds, against the start itself.

    python benchmarks/real_lm.py --seeds 0 1 2 --out DIR                   # 2 CPU cores: about 65 minutes
    python benchmarks/real_lm.py --model Qwen/Qwen3-0.6B --seeds 0 1 2 --out DIR   # one GPU (vLLM where installed)
    .venv-vllm/bin/python benchmarks/real_lm.py --speed --out DIR           # the generation backends, measured

Each run is a recipe through ``poly-epo train`` (``builtin:names_by_letter``: prompts ``A <category> starting with
<L>:``, ``pycountry`` deciding; 38 training prompts, 19 held out), evaluated on the held-out prompts with
``eval_samples`` samples each: pass@k for k = 1 ... 64 and the distinct correct answers per prompt (the task judge's
clusters), every number a mean over seeds with a 95% percentile-bootstrap interval over seeds. Runs go
``--workers`` at a time, each in a process of its own on one core. Writes ``DIR/results.json`` (each method's and the
start's summaries, the runs, and ``targets``: ``grpo_below_start``, ``poly_epo_keeps_coverage``, ``distinct_ratio``
and ``pass_at_1``, each ``{"met": ..., numbers}``), ``DIR/real_lm.png`` and ``DIR/real_lm.md`` (the docs page's
results; ``--page docs/pages/real-lm.md`` puts them there). ``--speed`` measures steps per minute with transformers'
``generate`` and with vLLM's engine colocated (where vLLM is installed), full fine-tuning and LoRA, and the held-out
evaluation's throughput with each backend: ``DIR/speeds.json``, which a later run in the same DIR shows. Finished runs
are kept in ``DIR/kept/``: run an interrupted comparison again with the same settings and it goes on from there.

Settings were chosen on seeds 100 and 101; the seeds reported are others.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import logging
import multiprocessing
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TASK = "builtin:names_by_letter"
DEFAULT_MODEL = "builtin:smollm2"
METHODS = ("grpo", "grpo_div", "poly_epo")
LABELS = {"grpo": "GRPO (Dr.GRPO)", "grpo_div": "GRPO+DIV", "poly_epo": "Poly-EPO", "start": "start (warm start)"}
COLORS = {"GRPO (Dr.GRPO)": "tab:red", "GRPO+DIV": "tab:orange", "Poly-EPO": "tab:blue", "start (warm start)": "gray"}
CURVE = ("step", "eval/pass@1", "eval/distinct_correct_clusters")
PAGE_MARKERS = ("<!-- real-lm:start -->", "<!-- real-lm:end -->")
LORA_MODULES = "all-linear"  # PEFT: every linear layer but the output head


@dataclass
class Settings:
    """The comparison's settings (the recipe keys each run overrides; the rest are PolyEPOConfig's)."""

    model: str = DEFAULT_MODEL
    start: str | None = None  # a start of one's own (a model folder), used as it is instead of the warm start
    steps: int = 60
    learning_rate: float = 2e-5
    prompts_per_step: int = 8
    num_generations: int = 8
    set_size: int = 4
    diversity_coef: float = 0.5
    eval_samples: int = 64
    curve_every: int = 10
    curve_samples: int = 16
    max_prompts: int | None = None  # the first held-out and training prompts only (a smoke run)
    workers: int = 2
    backend: str = "auto"  # generation while training: transformers, vllm (colocated), or auto
    seeds: list[int] = field(default_factory=lambda: [0, 1, 2])
    methods: list[str] = field(default_factory=lambda: list(METHODS))


def on_gpu() -> bool:
    import torch

    return torch.cuda.is_available()


def vllm_installed() -> bool:
    import importlib.util

    return importlib.util.find_spec("vllm") is not None


def generation_backend(s: Settings) -> str:
    """auto: vLLM colocated on a GPU where it is installed; transformers' generate on CPU (measured faster there,
    ``--speed``) and without vLLM."""
    if s.backend != "auto":
        return s.backend
    return "vllm" if on_gpu() and vllm_installed() else "transformers"


def hardware() -> str:
    """The machine in words, for tables and figures: "2 CPU cores", or the GPU's name."""
    import torch

    if torch.cuda.is_available():
        return f"one {torch.cuda.get_device_name(0)}"
    return f"{len(os.sched_getaffinity(0))} CPU cores"


def warm_start(s: Settings, out: Path) -> str:
    """The start every method and seed trains from: the task's warm start of ``s.model`` (for SmolLM2 the registered
    ``builtin:smollm2_names``, cached; for another model, built once into ``out/warm_start``)."""
    from poly_epo_trl.models import resolve_model
    from poly_epo_trl.tasks.names_by_letter.warm_start import cached_warm_start

    if s.start:
        return s.start
    if s.model == DEFAULT_MODEL:
        return resolve_model("builtin:smollm2_names")
    return str(cached_warm_start(s.model, out / "warm_start"))


def recipe(method: str, seed: int, s: Settings, start: str, out: Path) -> list[str]:
    """One run as ``poly-epo train`` arguments: the task's recipe keys, the comparison's settings, the device's."""
    argv = f"""--dataset_name {TASK} --eval_dataset_name {TASK} --model_name_or_path {start} --trainer {method}
    --output_dir {out / "runs" / f"{method}-seed{seed}"} --seed {seed} --data_seed {seed} --max_steps {s.steps}
    --per_device_train_batch_size {s.prompts_per_step * s.num_generations} --num_generations {s.num_generations}
    --set_size {s.set_size} --diversity_coef {s.diversity_coef} --learning_rate {s.learning_rate}
    --lr_scheduler_type constant --eval_steps {s.curve_every} --eval_num_samples {s.curve_samples}
    --eval_at_start true --logging_steps {max(s.steps // 4, 1)} --report_to none --save_strategy no
    --disable_tqdm true --log_level error --activation_checkpointing false""".split()
    if s.max_prompts:
        argv += ["--max_train_samples", str(s.max_prompts), "--eval_max_problems", str(s.max_prompts)]
    argv += ["--bf16", "true"] if on_gpu() else ["--use_cpu", "true", "--bf16", "false"]
    if generation_backend(s) == "vllm":
        argv += ["--use_vllm", "true", "--vllm_mode", "colocate"]
        argv += ["--vllm_gpu_memory_utilization", "0.3" if on_gpu() else "0.15"]
        argv += [] if on_gpu() else ["--vllm_dtype", "policy", "--vllm_enforce_eager", "true"]
    return argv


def quiet() -> None:
    """A worker's output: a line per held-out evaluation, no progress bars or library warnings."""
    import datasets
    import transformers

    logging.basicConfig(level=logging.WARNING, format="  %(message)s", force=True)
    logging.getLogger("poly_epo_trl.evaluation").setLevel(logging.INFO)
    logging.getLogger("transformers").setLevel(logging.ERROR)
    datasets.disable_progress_bars()
    transformers.utils.logging.disable_progress_bar()
    warnings.filterwarnings("ignore")


def one_core(workers: int) -> None:
    import torch

    if not torch.cuda.is_available():
        torch.set_num_threads(max(1, len(os.sched_getaffinity(0)) // max(workers, 1)))


def assembled(argv: list[str], s: Settings) -> tuple[tuple[Any, ...], Any]:
    """A worker's start: its share of the cores, its quiet output, and the run's recipe parsed and assembled."""
    one_core(s.workers)
    quiet()
    from poly_epo_trl.assembly import assemble_training
    from poly_epo_trl.commands import train

    parsed = train.parse(argv)
    return parsed, assemble_training(*parsed)


def train_one(method: str, seed: int, s: Settings, start: str, out: Path) -> dict[str, Any]:
    """One run (in a worker process): trained through ``train``, its held-out curve from its log history, and the
    final held-out evaluation (``s.eval_samples`` per prompt, the sampling seed the training seed)."""
    from poly_epo_trl.commands import train
    from poly_epo_trl.commands.demo.run import final_summary

    parsed, parts = assembled(recipe(method, seed, s, start, out), s)
    began = time.perf_counter()
    trainer = train.run(*parsed, parts, print_logs=False)
    seconds = time.perf_counter() - began
    history = trainer.state.log_history
    curve = [{k: log[k] for k in CURVE} for log in history if CURVE[1] in log]
    step_times = [log["step_time"] for log in history if "step_time" in log]
    final = final_summary(trainer, parts, s.eval_samples, parsed, seed)
    print(f"  {LABELS[method]}, seed {seed}: {s.steps} steps in {seconds:.0f} s", flush=True)
    return {"curve": curve, "final": final, "train_seconds": seconds, "step_times": step_times}


def evaluate_start(s: Settings, start: str, out: Path, seeds: list[int]) -> dict[str, Any]:
    """The start, evaluated as every run's final model is, once per seed's sampling seed (in a worker process)."""
    from poly_epo_trl.commands import train
    from poly_epo_trl.commands.demo.run import final_summary

    parsed, parts = assembled(recipe("grpo", s.seeds[0], s, start, out / "start"), s)
    trainer = train.make_trainer(*parsed, parts, print_logs=False)
    return {str(seed): final_summary(trainer, parts, s.eval_samples, parsed, seed) for seed in seeds}


def kept(path: Path, key: dict[str, Any]) -> Any:
    """A finished piece's result, kept from an earlier invocation with the same settings and start; else None."""
    if not path.is_file():
        return None
    saved = json.loads(path.read_text())
    return saved["result"] if saved.get("key") == key else None


def keep(path: Path, key: dict[str, Any], result: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"key": key, "result": result}))
    tmp.replace(path)


def run_key(s: Settings, start: str, seed: int | None = None) -> dict[str, Any]:
    """What a kept result depends on: the settings that shape a run (not the seeds listed, the workers or the
    methods), the start, and the run's seed."""
    shaping = {k: v for k, v in asdict(s).items() if k not in ("seeds", "methods", "workers")}
    return {**shaping, "start": start, "seed": seed}


def invocations(out: Path, seconds: float, kept_any: bool) -> float:
    """This invocation's seconds added to those of the earlier ones whose runs it kept (``DIR/kept/seconds.json``):
    the comparison's time in all."""
    path = out / "kept" / "seconds.json"
    earlier = json.loads(path.read_text()) if path.is_file() and kept_any else []
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps([*earlier, seconds]))
    return sum(earlier) + seconds


def die_with_parent() -> None:
    """A worker's first act (Linux): be killed when the comparison's process dies, so a killed comparison
    leaves no run training on (what it finished is kept)."""
    if sys.platform == "linux":
        import ctypes
        import signal

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def run_all(s: Settings, start: str, out: Path) -> tuple[dict[str, Any], dict[str, dict[str, Any]], int]:
    """The start's evaluation and every (method, seed) run, ``s.workers`` processes at a time. Each finished piece
    is kept (``DIR/kept/``), so an interrupted comparison run again with the same settings starts where it
    stopped."""
    context = multiprocessing.get_context("spawn")
    folder = out / "kept"
    runs: dict[str, dict[str, Any]] = {m: {} for m in s.methods}
    start_by_seed: dict[str, Any] = {}
    for seed in s.seeds:
        if (found := kept(folder / f"start-seed{seed}.json", run_key(s, start, seed))) is not None:
            start_by_seed[str(seed)] = found
        for m in s.methods:
            if (found := kept(folder / f"{m}-seed{seed}.json", run_key(s, start, seed))) is not None:
                runs[m][str(seed)] = found
    todo = [(m, seed) for seed in s.seeds for m in s.methods if str(seed) not in runs[m]]
    missing = [seed for seed in s.seeds if str(seed) not in start_by_seed]
    kept_count = sum(map(len, runs.values())) + len(start_by_seed)
    if kept_count:
        print(f"kept from an earlier invocation: {kept_count} of the runs and start evaluations", flush=True)
    with concurrent.futures.ProcessPoolExecutor(s.workers, mp_context=context, initializer=die_with_parent) as pool:
        futures = {pool.submit(evaluate_start, s, start, out, missing): ("start", None)} if missing else {}
        futures |= {pool.submit(train_one, m, seed, s, start, out): (m, seed) for m, seed in todo}
        for future in concurrent.futures.as_completed(futures):
            method, seed = futures[future]
            if method == "start":
                for one, result in future.result().items():
                    keep(folder / f"start-seed{one}.json", run_key(s, start, int(one)), result)
                    start_by_seed[one] = result
                continue
            runs[method][str(seed)] = future.result()
            keep(folder / f"{method}-seed{seed}.json", run_key(s, start, seed), runs[method][str(seed)])
    ordered = {str(seed): start_by_seed[str(seed)] for seed in s.seeds}
    return ordered, {m: dict(sorted(runs[m].items())) for m in s.methods}, kept_count


def targets(summary: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The paper's signature, on the means over seeds: (a) GRPO's pass@64 below the start's; (b) Poly-EPO's at least
    the start's minus 0.05 and above GRPO's; (c) Poly-EPO's distinct correct answers at least 1.5x GRPO's; (d)
    Poly-EPO's pass@1 at most 5 points below GRPO's."""
    start, grpo, poly = (summary[LABELS[k]] for k in ("start", "grpo", "poly_epo"))
    k = start["ks"][-1]

    def at(stats: dict[str, Any], i: int) -> float:
        return stats["pass_at_k"]["mean"][i]

    def at_least(value: float, bound: float) -> bool:
        """value >= bound, where a mean exactly on the bound (75/19 against 1.5 x 50/19) may land a rounding error
        below it."""
        return value >= bound - 1e-9

    distinct = [x["distinct_correct_clusters"]["mean"] for x in (poly, grpo)]
    ratio = distinct[0] / max(distinct[1], 1e-9)
    gap = 100 * (at(poly, 0) - at(grpo, 0))
    return {
        "grpo_below_start": {
            "met": at(grpo, -1) < at(start, -1),
            "k": k,
            "grpo": at(grpo, -1),
            "start": at(start, -1),
        },
        "poly_epo_keeps_coverage": {
            "met": at_least(at(poly, -1), at(start, -1) - 0.05) and at(poly, -1) > at(grpo, -1),
            "k": k,
            "poly_epo": at(poly, -1),
            "start": at(start, -1),
            "grpo": at(grpo, -1),
        },
        "distinct_ratio": {"met": at_least(ratio, 1.5), "ratio": ratio, "poly_epo": distinct[0], "grpo": distinct[1]},
        "pass_at_1": {"met": at_least(gap, -5), "gap_points": gap, "poly_epo": at(poly, 0), "grpo": at(grpo, 0)},
    }


def figure(report: dict[str, Any], path: Path) -> None:
    """Distinct correct answers per held-out prompt over training, and the final pass@k against k, each method
    against the start."""
    from poly_epo_trl.evaluation.plots import training_figure
    from poly_epo_trl.evaluation.report import seeds_interval

    s = report["settings"]
    curves = {
        LABELS[m]: [[(p["step"], p[CURVE[2]]) for p in run["curve"]] for run in by_seed.values()]
        for m, by_seed in report["runs"].items()
    }
    fig = training_figure(
        curves, "distinct correct answers", report["summary"], seeds_interval(len(s["seeds"])), COLORS
    )
    fig.suptitle(
        f"{report['model']} on names_by_letter, {len(s['seeds'])} seeds, {report['hardware']}", fontsize=10, y=1.0
    )
    fig.savefig(path, dpi=110, bbox_inches="tight")


def page(report: dict[str, Any], figure_path: str) -> str:
    """The results as the docs page shows them (Markdown): the table with intervals, the targets, the settings,
    the backends' speeds where measured."""
    from poly_epo_trl.evaluation.report import format_interval, seeds_interval

    s, summary = report["settings"], report["summary"]
    ks = summary[LABELS["start"]]["ks"]
    shown = [i for i, k in enumerate(ks) if k in (1, 4, 16, ks[-1])]
    head = ["run", *[f"pass@{ks[i]}" for i in shown], "distinct correct per prompt"]
    lines = [
        f"![pass@k against k, and distinct correct answers over training: the start, GRPO, GRPO+DIV and Poly-EPO, "
        f"{len(s['seeds'])} seeds, {report['hardware']}]({figure_path})",
        "",
        f"{report['model']}, {summary[LABELS['start']]['num_problems']} held-out prompts x "
        f"{s['eval_samples']} samples, seeds {s['seeds']}, {report['hardware']}: mean "
        f"[{seeds_interval(len(s['seeds']))}]. {s['steps']} steps of {s['prompts_per_step']} prompts x "
        f"{s['num_generations']} rollouts, learning rate {s['learning_rate']:g}, n = {s['set_size']}, lambda = "
        f"{s['diversity_coef']:g}; {report['seconds'] / 60:.0f} minutes in all "
        f"(`python benchmarks/real_lm.py --seeds {' '.join(map(str, s['seeds']))}`).",
        "",
        "| " + " | ".join(head) + " |",
        "| " + " | ".join("---" for _ in head) + " |",
    ]
    for name, stats in summary.items():
        cells = [format_interval(stats["pass_at_k"], 3, i) for i in shown]
        lines.append(
            f"| {name} | " + " | ".join(cells) + f" | {format_interval(stats['distinct_correct_clusters'], 2)} |"
        )
    lines += ["", "| target | met | numbers |", "| --- | --- | --- |"]
    for name, target in report["targets"].items():
        numbers = ", ".join(
            f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}" for k, v in target.items() if k != "met"
        )
        lines.append(f"| `{name}` | {'yes' if target['met'] else '**no**'} | {numbers} |")
    speeds = report.get("speeds")
    if speeds:
        lines += ["", f"Generation backends ({speeds['hardware']}, `--speed`, {speeds['steps']} steps each):", ""]
        lines += [
            "| training generation | fine-tuning | steps per minute | median step |",
            "| --- | --- | --- | --- |",
        ]
        for row in speeds["training"]:
            lines.append(
                f"| {row['backend']} | {row['tuning']} | {row['steps_per_minute']:.2f} | {row['median_step']:.1f} s |"
            )
        lines += ["", "| held-out evaluation | completions per second | engine start |", "| --- | --- | --- |"]
        for row in speeds["evaluation"]:
            lines.append(f"| {row['backend']} | {row['per_second']:.1f} | {row['start']:.0f} s |")
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


def compare(s: Settings, out: Path, page_path: Path | None) -> dict[str, Any]:
    """The whole comparison: the start, every run, the summaries with intervals, the targets, the figure and page."""
    from poly_epo_trl.evaluation.report import across_seeds, format_table

    began = time.perf_counter()
    out.mkdir(parents=True, exist_ok=True)
    start = warm_start(s, out)
    print(
        f"start: {start}; {len(s.methods)} methods x {len(s.seeds)} seeds, {s.workers} at a time, "
        f"generation: {generation_backend(s)}, {hardware()}",
        flush=True,
    )
    start_finals, runs, kept_count = run_all(s, start, out)
    finals = {"start": list(start_finals.values())} | {m: [r["final"] for r in runs[m].values()] for m in s.methods}
    summary = {LABELS[m]: across_seeds(values) for m, values in finals.items()}
    report = {
        "settings": asdict(s),
        "model": "SmolLM2-135M-Instruct" if s.model == DEFAULT_MODEL else s.model,
        "hardware": hardware(),
        "generation_backend": generation_backend(s),
        "start_model": start,
        "summary": summary,
        "start": summary[LABELS["start"]],
        "methods": {m: summary[LABELS[m]] for m in s.methods},
        "start_by_seed": start_finals,
        "runs": runs,
        "python": platform.python_version(),
    }
    if {"grpo", "poly_epo"} <= set(s.methods):
        report["targets"] = targets(summary)
    speeds = out / "speeds.json"
    if speeds.is_file():
        report["speeds"] = json.loads(speeds.read_text())
    report["seconds"] = invocations(out, time.perf_counter() - began, kept_count > 0)
    (out / "results.json").write_text(json.dumps(report, indent=2))
    figure(report, out / "real_lm.png")
    if "targets" in report:
        text = page(report, "figures/real_lm.png" if page_path else "real_lm.png")
        (out / "real_lm.md").write_text(text + "\n")
        if page_path:
            write_page(text, page_path)
    print(f"\n{report['model']} on names_by_letter ({report['hardware']}); seeds {s.seeds}")
    print(format_table(summary, first=""))
    for name, target in report.get("targets", {}).items():
        print(
            f"  {'met' if target['met'] else 'NOT met'}: {name} { ({k: v for k, v in target.items() if k != 'met'}) }"
        )
    print(f"results: {out / 'results.json'}   figure: {out / 'real_lm.png'}   ({report['seconds'] / 60:.1f} min)")
    return report


TRAIN = """
import json, sys
from poly_epo_trl.commands.train import main
trainer = main(sys.argv[2:])
json.dump(trainer.state.log_history, open(sys.argv[1], "w"))
"""


def speed_of_training(s: Settings, start: str, backend: str, tuning: str, steps: int, folder: Path) -> dict[str, Any]:
    """Steps per minute of one configuration: ``steps`` steps of the comparison's recipe in a process of its own
    (both cores), the first step (the engine's warm-up) left out."""
    quick = Settings(**{**asdict(s), "steps": steps, "backend": backend, "curve_every": 10_000, "workers": 1})
    argv = [*recipe("poly_epo", 0, quick, start, folder / f"{backend}-{tuning}"), "--logging_steps", "1"]
    argv += ["--eval_at_start", "false"]
    if tuning == "lora":
        argv += ["--use_peft", "true", "--lora_r", "16", "--lora_alpha", "32", "--lora_target_modules", LORA_MODULES]
    history = folder / f"{backend}-{tuning}.json"
    env = {**os.environ, "OMP_NUM_THREADS": str(len(os.sched_getaffinity(0))), "TOKENIZERS_PARALLELISM": "false"}
    subprocess.run(
        [sys.executable, "-c", TRAIN, str(history), *argv], env=env, check=True, cwd=ROOT, stdout=subprocess.DEVNULL
    )
    logs = json.loads(history.read_text())
    times = [h["step_time"] for h in logs if "step_time" in h][1:]
    if not times:
        raise RuntimeError(f"{backend}, {tuning}: no step times past the first in the training log: {logs[-3:]}")
    median = statistics.median(times)
    return {"backend": backend, "tuning": tuning, "median_step": median, "steps_per_minute": 60 / median}


def speed_of_evaluation(s: Settings, start: str, backend: str) -> dict[str, Any]:
    """Held-out completions per second of one backend (every held-out prompt, ``eval_samples`` each), and its
    engine's start apart."""
    import torch

    from poly_epo_trl.evaluation.sampling import SamplingSettings, TransformersSampler, VLLMSampler
    from poly_epo_trl.tasks.names_by_letter import split_prompts

    torch.set_num_threads(len(os.sched_getaffinity(0)))
    prompts = split_prompts("test")
    sampling = SamplingSettings(num_samples=s.eval_samples, max_new_tokens=8, seed=0)
    began = time.perf_counter()
    if backend == "vllm":
        sampler = VLLMSampler(
            start, sampling, dtype="float32", gpu_memory_utilization=0.15, max_model_len=128, enforce_eager=True
        )
    else:
        sampler = TransformersSampler.from_pretrained(start, sampling, batch_size=s.eval_samples, dtype="float32")
    started = time.perf_counter() - began
    began = time.perf_counter()
    texts = sampler.sample(prompts, list(range(len(prompts))))
    seconds = time.perf_counter() - began
    return {"backend": backend, "per_second": sum(map(len, texts)) / seconds, "seconds": seconds, "start": started}


def measure_speeds(s: Settings, out: Path, steps: int) -> dict[str, Any]:
    """``--speed``: each generation backend and fine-tuning kind, one at a time on every core."""
    out.mkdir(parents=True, exist_ok=True)
    start = warm_start(s, out)
    backends = ["transformers", *(["vllm"] if vllm_installed() else [])]
    with tempfile.TemporaryDirectory() as tmp:
        training = [
            speed_of_training(s, start, backend, tuning, steps, Path(tmp))
            for backend in backends
            for tuning in ("full", "lora")
        ]
    evaluation = [speed_of_evaluation(s, start, backend) for backend in backends]
    speeds = {"hardware": hardware(), "steps": steps, "training": training, "evaluation": evaluation}
    (out / "speeds.json").write_text(json.dumps(speeds, indent=2))
    for row in training:
        print(f"training, {row['backend']}, {row['tuning']}: {row['steps_per_minute']:.2f} steps/min")
    for row in evaluation:
        print(f"evaluation, {row['backend']}: {row['per_second']:.1f} completions/s (start {row['start']:.0f} s)")
    return speeds


def parse_args(argv: list[str] | None) -> tuple[Settings, argparse.Namespace]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--page", type=Path, help="a docs page with the results block to fill (docs/pages/real-lm.md)")
    parser.add_argument("--speed", action="store_true", help="measure the generation backends instead")
    parser.add_argument("--speed-steps", type=int, default=6)
    parser.add_argument("--seeds", type=int, nargs="+", default=Settings().seeds)
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    parser.add_argument("--backend", default="auto", choices=("auto", "transformers", "vllm"))
    defaults = Settings()
    for f in fields(Settings):
        if f.name in ("seeds", "methods", "backend"):
            continue
        value = getattr(defaults, f.name)
        kind = {"max_prompts": int, "start": str}.get(f.name, type(value))
        parser.add_argument(f"--{f.name.replace('_', '-')}", type=kind, default=value)
    args = parser.parse_args(argv)
    if not on_gpu() and args.workers < 1:
        parser.error("--workers must be at least 1")
    settings = Settings(**{f.name: getattr(args, f.name) for f in fields(Settings)})
    if on_gpu() and "--workers" not in (argv or sys.argv):
        settings.workers = 1  # one GPU: one run at a time
    return settings, args


def main(argv: list[str] | None = None) -> dict[str, Any]:
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    settings, args = parse_args(argv)
    if args.speed:
        return measure_speeds(settings, args.out, args.speed_steps)
    return compare(settings, args.out, args.page)


if __name__ == "__main__":
    main()
