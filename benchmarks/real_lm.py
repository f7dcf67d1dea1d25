"""The paper's effect on a real pretrained LM: GRPO (Dr.GRPO) and Poly-EPO (``--methods all``: every registered method)
from one warm start of SmolLM2-135M-Instruct on the names_by_letter task, over several seeds, against the start.

    python benchmarks/real_lm.py --seeds 0 1 2 --out DIR                   # GRPO and Poly-EPO, 2 CPU cores
    python benchmarks/real_lm.py --model Qwen/Qwen3-0.6B --seeds 0 1 2 --out DIR   # one GPU (vLLM where installed)

Each run is a recipe through ``poly-epo train`` (``builtin:names_by_letter``: prompts ``A <category> starting with
<L>:``, ``pycountry`` deciding; 38 training prompts), evaluated on a held-out split (``--held-out``: ``prefix``, the 66
two-letter prefixes of the trained letters, whose answers are the rarer answers of trained prompts; or ``test``, 19
other letters) with ``eval_samples`` samples a prompt (the start: as many for each seed's sampling seed, pooled).
The statistics are the library's (``evaluation.report``: pass@k for k up to n / 2 and the distinct correct answers
per prompt, each a mean over seeds and prompts with its 95% interval over both, and paired differences); this file
holds the runs; ``real_lm_page.py`` the science drawn from them: the targets, their bounds, the figure and the page.
Writes ``DIR/results.json``
(every evaluation's per-prompt records, the summaries, the comparisons, ``gain_change``: each method's gain over
the start at pass@1 minus its gain at the largest k, paired; the step split, and ``targets``:
``grpo_below_start``, ``poly_epo_keeps_coverage``, ``distinct_ratio`` and ``pass_at_1``, each ``{"met": ..., its
deciding intervals}``), ``DIR/real_lm.png`` and ``DIR/real_lm.md`` (``--page docs/pages/real-lm.md`` puts them
there). Runs go ``--workers`` at a time, each in a process of its own on one core, and finished runs are kept in
``DIR/kept/``: run an interrupted comparison again with the same settings and it goes on from there. ``--results
FILE`` draws the statistics, figure and page again from a results.json's per-prompt records, running nothing (the
reported run's is ``benchmarks/results/real_lm.json``).
``real_lm_gate.py`` evaluates the start at several temperatures first; ``real_lm_speed.py`` measures the generation
backends (its ``DIR/speeds.json`` shows on this page).

The design, settings and targets were fixed on tuning seed 100; the seeds reported are others.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import multiprocessing
import os
import platform
import shutil
import sys
import time
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from real_lm_page import CURVE, LABELS, analysis, label_methods, publish, recomputed, step_split

ROOT = Path(__file__).resolve().parent.parent
TASK = "builtin:names_by_letter"
DEFAULT_MODEL = "builtin:smollm2"
METHODS = ("grpo", "poly_epo")  # the timed comparison; --methods all adds every other registered method
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
    held_out: str = "prefix"  # the task's held-out split: prefix (two-letter prefixes of trained letters) or test
    eval_samples: int = 128
    temperature: float = 1.0
    curve_every: int = 20
    curve_samples: int = 8
    max_prompts: int | None = None  # the first held-out and training prompts only (a smoke run)
    workers: int = 2
    backend: str = "auto"  # generation while training: transformers, vllm (colocated), or auto
    seeds: list[int] = field(default_factory=lambda: [0, 1, 2])
    methods: list[str] = field(default_factory=lambda: list(METHODS))


def on_gpu() -> bool:
    import torch

    return torch.cuda.is_available()


def generation_backend(s: Settings) -> str:
    """auto: vLLM colocated on a GPU where it is installed; transformers' generate on CPU (measured faster there,
    ``--speed``) and without vLLM."""
    if s.backend != "auto":
        return s.backend
    from poly_epo_trl.evaluation.sampling import vllm_available

    return "vllm" if on_gpu() and vllm_available() else "transformers"


def precision() -> str:
    """The dtype the runs train and sample in: bf16 on a GPU (where it supports it), float32 on CPU."""
    import torch

    return "bf16" if torch.cuda.is_available() and torch.cuda.is_bf16_supported() else "float32"


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
    --dataset_test_split {s.held_out} --temperature {s.temperature}
    --lr_scheduler_type constant --eval_steps {s.curve_every} --eval_num_samples {s.curve_samples}
    --eval_at_start true --logging_steps {max(s.steps // 4, 1)} --report_to none --save_strategy steps
    --save_steps {s.curve_every} --save_total_limit 1 --disable_tqdm true --log_level error
    --activation_checkpointing false""".split()
    if s.max_prompts:
        argv += ["--max_train_samples", str(s.max_prompts), "--eval_max_problems", str(s.max_prompts)]
    argv += ["--bf16", "true"] if precision() == "bf16" else ["--bf16", "false"]
    argv += [] if on_gpu() else ["--use_cpu", "true"]
    if generation_backend(s) == "vllm":
        argv += ["--use_vllm", "true", "--vllm_mode", "colocate"]
        argv += ["--vllm_gpu_memory_utilization", "0.3" if on_gpu() else "0.15"]
        argv += [] if on_gpu() else ["--vllm_dtype", "policy", "--vllm_enforce_eager", "true"]
    return argv


def one_core(workers: int) -> None:
    import torch

    if not torch.cuda.is_available():
        torch.set_num_threads(max(1, len(os.sched_getaffinity(0)) // max(workers, 1)))


def assembled(argv: list[str], s: Settings) -> tuple[tuple[Any, ...], Any]:
    """A worker's start: its share of the cores, its quiet output, and the run's recipe parsed and assembled."""
    from poly_epo_trl.assembly import assemble_training, quiet_logging

    one_core(s.workers)
    quiet_logging()
    from poly_epo_trl.commands import train

    parsed = train.parse(argv)
    return parsed, assemble_training(*parsed)


def held_out_final(trainer: Any, parts: Any, parsed: tuple, s: Settings, seed: int) -> dict[str, Any]:
    """A model's held-out evaluation (``s.eval_samples`` per prompt, sampling seed ``seed``), each problem's record
    carrying its prompt."""
    from poly_epo_trl.assembly import held_out_summary

    final = held_out_summary(trainer, parts, s.eval_samples, parsed, seed)
    for record, row in zip(final["problems"], parts.eval_rows, strict=True):
        record["prompt"] = row["prompt"]
    return final


def train_one(method: str, seed: int, s: Settings, start: str, out: Path) -> dict[str, Any]:
    """One run (in a worker process): trained through ``train``, its held-out curve from its log history, then the
    final held-out evaluation of the saved model (``s.eval_samples`` per prompt, the sampling seed the training
    seed). Resumable at every stage: the run saves a checkpoint at each curve point (``train`` resumes from the last
    one, exactly), and its training record is kept (``DIR/kept/M-seedS.trained.json``) before the final evaluation,
    so a run killed there is evaluated again, not trained again."""
    from poly_epo_trl.commands import train
    from poly_epo_trl.evaluation.curves import STEP_PARTS

    argv = recipe(method, seed, s, start, out)
    folder = out / "runs" / f"{method}-seed{seed}"
    trained_path = out / "kept" / f"{method}-seed{seed}.trained.json"
    trained = kept(trained_path, run_key(s, start, seed))
    if trained is None:
        parsed, parts = assembled(argv, s)
        resumed_from = last_step(folder)
        began = time.perf_counter()
        trainer = train.run(*parsed, parts, print_logs=False)
        seconds = time.perf_counter() - began
        history = trainer.state.log_history if trainer is not None else saved_history(folder, s.steps)
        trained = {
            "curve": [{k: log[k] for k in CURVE} for log in history if CURVE[1] in log],
            "train_seconds": seconds,
            "resumed_from_step": resumed_from,
            "step_times": [log["step_time"] for log in history if "step_time" in log],
            "step_parts": {key: [log[key] for log in history if key in log] for key in STEP_PARTS},
        }
        keep(trained_path, run_key(s, start, seed), trained)
        resumed = f" (resumed from step {resumed_from})" if resumed_from else ""
        print(f"  {LABELS.get(method, method)}, seed {seed}: {s.steps} steps in {seconds:.0f} s{resumed}", flush=True)
    began = time.perf_counter()
    final = evaluate_model(method, str(folder), s, out / "final", seed)
    return {**trained, "final": final, "eval_seconds": time.perf_counter() - began}


def last_step(folder: Path) -> int:
    """The step of ``folder``'s last complete checkpoint (0: none), the one ``train`` resumes from."""
    from poly_epo_trl.trainer.resume import complete_checkpoints

    complete, _ = complete_checkpoints(str(folder), 1)
    return int(complete[-1].rsplit("-", 1)[1]) if complete else 0


def saved_history(folder: Path, steps: int) -> list[dict[str, Any]]:
    """The log history of a run ``train`` found finished (its last checkpoint's, which ends it)."""
    return json.loads((folder / f"checkpoint-{steps}" / "trainer_state.json").read_text())["log_history"]


def evaluate_model(method: str, model: str, s: Settings, out: Path, seed: int) -> dict[str, Any]:
    """A saved model's final held-out evaluation, through the untrained trainer of ``method``'s recipe for it."""
    from poly_epo_trl.commands import train

    parsed, parts = assembled(recipe(method, seed, s, model, out), s)
    trainer = train.make_trainer(*parsed, parts, print_logs=False)
    return held_out_final(trainer, parts, parsed, s, seed)


def evaluate_start(s: Settings, start: str, out: Path, seed: int) -> dict[str, Any]:
    """The start, evaluated as every run's final model is (in a worker process), for seed ``seed``'s sampling."""
    return evaluate_model("grpo", start, s, out / "start", seed)


def kept(path: Path, key: dict[str, Any]) -> Any:
    """A finished piece's result, kept from an earlier invocation with the same settings and start; else None."""
    if not path.is_file():
        return None
    saved = json.loads(path.read_text())
    return saved["result"] if saved.get("key") == key else None


def keep(path: Path, key: dict[str, Any], result: Any) -> None:
    """``result`` kept under ``key`` (``kept`` reads it back), whole or not at all."""
    from poly_epo_trl.files import atomic_write_text

    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps({"key": key, "result": result}))


def run_key(s: Settings, start: str, seed: int | None = None) -> dict[str, Any]:
    """What a kept result depends on: the settings that shape a run (not the seeds listed, the workers or the
    methods), the start, and the run's seed."""
    shaping = {k: v for k, v in asdict(s).items() if k not in ("seeds", "methods", "workers")}
    return {**shaping, "start": start, "seed": seed}


class Clock:
    """The comparison's time in all: this invocation's seconds after those of the earlier invocations whose pieces
    it kept (``DIR/kept/seconds.json``), written each time a piece is kept, so an invocation killed later counts up to
    its last kept piece (what it lost is done again, and counted then)."""

    def __init__(self, out: Path) -> None:
        self.path = out / "kept" / "seconds.json"
        self.earlier: list[float] = json.loads(self.path.read_text()) if self.path.is_file() else []
        self.began = time.perf_counter()

    def forget_earlier(self) -> None:
        """Nothing was kept: the earlier invocations' time was for other settings."""
        self.earlier = []

    def tick(self) -> float:
        seconds = time.perf_counter() - self.began
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text(json.dumps([*self.earlier, seconds]))
        return sum(self.earlier) + seconds


def die_with_parent() -> None:
    """A worker's first act (Linux): be killed when the comparison's process dies, so a killed comparison
    leaves no run training on (what it finished is kept)."""
    if sys.platform == "linux":
        import ctypes
        import signal

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def run_all(s: Settings, start: str, out: Path, clock: Clock) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
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
    finished = sum(map(len, runs.values())) + len(start_by_seed)
    trained = sum(
        kept(folder / f"{m}-seed{seed}.trained.json", run_key(s, start, seed)) is not None for m, seed in todo
    )
    if finished or trained:
        also = f", and {trained} runs trained but not yet evaluated" if trained else ""
        print(f"kept from an earlier invocation: {finished} of the runs and start evaluations{also}", flush=True)
    else:
        clock.forget_earlier()
    with concurrent.futures.ProcessPoolExecutor(s.workers, mp_context=context, initializer=die_with_parent) as pool:
        futures = {pool.submit(evaluate_start, s, start, out, seed): ("start", seed) for seed in missing}
        futures |= {pool.submit(train_one, m, seed, s, start, out): (m, seed) for m, seed in todo}
        for future in concurrent.futures.as_completed(futures):
            method, seed = futures[future]
            if method == "start":
                start_by_seed[str(seed)] = future.result()
                keep(folder / f"start-seed{seed}.json", run_key(s, start, seed), start_by_seed[str(seed)])
            else:
                runs[method][str(seed)] = future.result()
                keep(folder / f"{method}-seed{seed}.json", run_key(s, start, seed), runs[method][str(seed)])
                for checkpoint in (out / "runs" / f"{method}-seed{seed}").glob("checkpoint-*"):
                    shutil.rmtree(checkpoint)  # only for resuming a killed run: this one is kept
            clock.tick()
    ordered = {str(seed): start_by_seed[str(seed)] for seed in s.seeds}
    return ordered, {m: dict(sorted(runs[m].items())) for m in s.methods}


# The settings' presets: the CPU table's (Settings' defaults) and the one-GPU long arm's, where GRPO has time to
# narrow; the long arm's length is a proposal until a timing probe and tuning seeds (100 and up) on a GPU fix it
# (docs/pages/real-lm.md, "On one GPU").
ARMS: dict[str, dict[str, Any]] = {"cpu": {}, "long": {"steps": 600, "curve_every": 50}}


def compare(s: Settings, out: Path, page_path: Path | None) -> dict[str, Any]:
    """The whole comparison: the start, every run, the summaries with intervals, the targets, the figure and page."""
    out.mkdir(parents=True, exist_ok=True)
    clock = Clock(out)
    start = warm_start(s, out)
    print(
        f"start: {start}; {len(s.methods)} methods x {len(s.seeds)} seeds, {s.workers} at a time, "
        f"held out: {s.held_out}, generation: {generation_backend(s)}, {hardware()}",
        flush=True,
    )
    start_finals, runs = run_all(s, start, out, clock)
    report = {
        "settings": asdict(s),
        "model": "SmolLM2-135M-Instruct" if s.model == DEFAULT_MODEL else s.model,
        "hardware": hardware(),
        "precision": precision(),
        "generation_backend": generation_backend(s),
        "start_model": start_name(s),
        **analysis(asdict(s), start_finals, runs),
        "step_seconds": step_split(runs),
        "start_by_seed": start_finals,
        "runs": runs,
        "python": platform.python_version(),
    }
    speeds = out / "speeds.json"
    if speeds.is_file():
        report["speeds"] = json.loads(speeds.read_text())
    report["seconds"] = clock.tick()
    publish(report, out, page_path)
    return report


def start_name(s: Settings) -> str:
    """The start in words for results.json (a registered name, or the folder given), not a cache's path."""
    if s.start:
        return s.start
    return "builtin:smollm2_names" if s.model == DEFAULT_MODEL else f"the names_by_letter warm start of {s.model}"


def chosen_methods(parser: argparse.ArgumentParser, names: list[str]) -> list[str]:
    """``all``: every registered method (GRPO and Poly-EPO first); else the names given, each registered."""
    from poly_epo_trl.methods.base import METHODS as REGISTERED

    known = REGISTERED.names()
    chosen = [*METHODS, *(m for m in known if m not in METHODS)] if names == ["all"] else names
    unknown = [m for m in chosen if m not in known]
    if unknown:
        parser.error(f"--methods: {unknown} not registered; choose from {known} or all")
    label_methods(chosen)
    return chosen


def parse_args(argv: list[str] | None) -> tuple[Settings, argparse.Namespace]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--page", type=Path, help="a docs page with the results block to fill (docs/pages/real-lm.md)")
    parser.add_argument(
        "--results",
        type=Path,
        help="a results.json to draw from instead of running (benchmarks/results/real_lm.json): every statistic "
        "computed again from its per-prompt records, its settings the file's",
    )
    parser.add_argument("--seeds", type=int, nargs="+", default=Settings().seeds)
    parser.add_argument(
        "--methods",
        nargs="+",
        default=list(METHODS),
        help=f"registered methods, or all (default: {' '.join(METHODS)})",
    )
    parser.add_argument("--backend", default="auto", choices=("auto", "transformers", "vllm"))
    parser.add_argument(
        "--arm",
        default="cpu",
        choices=sorted(ARMS),
        help="the settings' preset: cpu (the 2-core table's 60 steps) or long (the one-GPU arm: "
        + ", ".join(f"{k} {v}" for k, v in ARMS["long"].items())
        + "); a setting given on the command line wins",
    )
    defaults = Settings()
    for f in fields(Settings):
        if f.name in ("seeds", "methods", "backend"):
            continue
        value = getattr(defaults, f.name)
        kind = {"max_prompts": int, "start": str}.get(f.name, type(value))
        parser.add_argument(f"--{f.name.replace('_', '-')}", type=kind, default=value)
    args = parser.parse_args(argv)
    given = " ".join(argv if argv is not None else sys.argv[1:])
    for name, value in ARMS[args.arm].items():
        if f"--{name.replace('_', '-')}" not in given:
            setattr(args, name, value)
    args.methods = chosen_methods(parser, args.methods)
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
    if args.results:
        report = recomputed(json.loads(args.results.read_text()))
        publish(report, args.out, args.page)
        return report
    return compare(settings, args.out, args.page)


if __name__ == "__main__":
    main()
