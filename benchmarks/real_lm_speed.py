"""The real-LM benchmark's generation backends, measured: steps per minute of its Poly-EPO recipe with transformers'
``generate`` and with vLLM's engine colocated (where vLLM is installed), full fine-tuning and LoRA, and the held-out
evaluation's completions per second with each backend.

    .venv-vllm/bin/python benchmarks/real_lm_speed.py --out DIR     # the same DIR as benchmarks/real_lm.py's

Writes ``DIR/speeds.json``, which a later ``benchmarks/real_lm.py`` run in the same DIR shows on its page. Each
configuration runs alone on every core; the first step (an engine's warm-up) is left out.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from real_lm import LORA_MODULES, ROOT, Settings, hardware, recipe, warm_start

from poly_epo_trl.evaluation.sampling import vllm_available

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
    backends = ["transformers", *(["vllm"] if vllm_available() else [])]
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


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--steps", type=int, default=6, help="training steps a configuration (the first left out)")
    parser.add_argument("--eval-samples", type=int, default=Settings().eval_samples)
    args = parser.parse_args(argv)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    return measure_speeds(Settings(eval_samples=args.eval_samples), args.out, args.steps)


if __name__ == "__main__":
    main()
