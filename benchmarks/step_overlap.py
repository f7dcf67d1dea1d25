"""What the judge costs a training step: GRPO against Poly-EPO on CPU with a tiny model.

Usage: python benchmarks/step_overlap.py [--rounds 3] [--steps 4] [--latency 1.0]

1. Overlap. 2 prompts x 8 rollouts per step, a reward function that takes ``latency`` seconds and an asynchronous
   judge that takes ``latency`` seconds per batch (as an HTTP judge answering all groups concurrently does). GRPO
   (TRL's GRPOTrainer, same Dr.GRPO settings) and Poly-EPO runs alternate; the median step time of each (the first
   step of a run left out) and their ratio are printed, with a timeline of when the reward and the judge ran in the
   last Poly-EPO step. The judge starts when the completions are decoded, so the ratio is near 1 (it was 1.97 when
   the judge started after the rewards).
2. Overhead. 128 groups of 8 per step with an instant reward and judge: the time Poly-EPO's own code adds to a step
   (its overrides' time minus the time of the GRPOTrainer methods they call), median over steps.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "helpers"))

import torch
from tiny import save_tiny_model, toy_dataset
from transformers import AutoTokenizer, TrainerCallback
from trl import GRPOConfig, GRPOTrainer

from poly_epo_trl import PolyEPOConfig, PolyEPOTrainer
from poly_epo_trl.trainer import poly_epo_trainer

EVENTS: list[tuple[str, float, float]] = []  # (what, start, end), perf_counter seconds


class StepTimes(TrainerCallback):
    def __init__(self) -> None:
        self.starts: list[float] = []
        self.seconds: list[float] = []

    def on_step_begin(self, args, state, control, **kwargs):
        self.starts.append(time.perf_counter())

    def on_step_end(self, args, state, control, **kwargs):
        self.seconds.append(time.perf_counter() - self.starts[-1])


def slow_reward(latency: float):
    def reward(completions, **kwargs):
        start = time.perf_counter()
        time.sleep(latency)
        EVENTS.append(("reward", start, time.perf_counter()))
        return [float(len(c) % 3) for c in completions]

    return reward


def slow_judge(latency: float):
    async def judge(prompt: str, completions: list[str]) -> list[int]:
        start = time.perf_counter()
        await asyncio.sleep(latency)  # every group of the batch at once: latency seconds per batch
        EVENTS.append(("judge", start, time.perf_counter()))
        return [len(c) % 3 for c in completions]

    return judge


# How a run is set up: on CPU in float32 (this script's default), or on a GPU in bf16 (benchmarks/gpu_step.py)
CPU = {"use_cpu": True, "bf16": False, "activation_checkpointing": False, "max_completion_length": 4}


def settings(out: str, batch: int, steps: int, device: dict = CPU) -> dict:
    return dict(
        output_dir=out,
        per_device_train_batch_size=batch,
        num_generations=8,
        max_steps=steps,
        learning_rate=1e-3,
        loss_type="dr_grpo",
        scale_rewards="none",
        beta=0.0,
        report_to="none",
        save_strategy="no",
        logging_steps=1000,
        seed=0,
        disable_tqdm=True,
        **device,
    )


def synchronize() -> None:
    """Wait for the GPU's queued work, so a timed region is charged for its own kernels only (nothing on CPU)."""
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def run(
    kind: str, model_dir: Path, out: str, batch: int, steps: int, reward, judge, device: dict = CPU
) -> tuple[list[float], float]:
    times = StepTimes()
    common = dict(
        model=str(model_dir),
        reward_funcs=reward,
        train_dataset=toy_dataset(range(20, 20 + max(16, batch // 8 * steps))),
        processing_class=AutoTokenizer.from_pretrained(model_dir),
        callbacks=[times],
    )
    config = settings(out, batch, steps, device)
    if kind == "grpo":
        trainer = GRPOTrainer(args=GRPOConfig(**config), **common)
    else:
        trainer = PolyEPOTrainer(args=PolyEPOConfig(**config, set_size=4), judge=judge, **common)
    EVENTS.clear()
    trainer.train()
    return times.seconds[1:], times.starts[-1]


def overlap(
    model_dir: Path, rounds: int, steps: int, latency: float, batch: int = 16, device: dict = CPU
) -> tuple[float, float]:
    """GRPO's and Poly-EPO's median step (seconds) with a slow reward and judge, printed with their ratio."""
    reward, judge = slow_reward(latency), slow_judge(latency)
    medians: dict[str, list[float]] = defaultdict(list)
    with tempfile.TemporaryDirectory() as out:
        for _ in range(rounds):
            for kind in ("grpo", "poly_epo"):
                seconds, last_start = run(kind, model_dir, out, batch, steps, reward, judge, device)
                medians[kind].extend(seconds)
    grpo, poly = statistics.median(medians["grpo"]), statistics.median(medians["poly_epo"])
    print(
        f"1. {batch // 8} prompts x 8 rollouts, reward {latency:g} s, judge {latency:g} s per batch, {rounds} rounds"
    )
    print(f"   GRPO step     median {grpo:.3f} s  ({len(medians['grpo'])} steps)")
    print(f"   Poly-EPO step median {poly:.3f} s  ({len(medians['poly_epo'])} steps)")
    print(f"   Poly-EPO / GRPO = {poly / grpo:.3f}   (goal <= 1.10)")
    print("   last Poly-EPO step, seconds from the step's start:")
    for what, start, end in sorted(EVENTS, key=lambda e: e[1]):
        if start >= last_start:
            bar = " " * int((start - last_start) * 20) + "#" * max(1, int((end - start) * 20))
            print(f"   {what:<7}{start - last_start:6.2f} -> {end - last_start:5.2f}  |{bar}")
    return grpo, poly


def overhead(model_dir: Path, steps: int, device: dict = CPU) -> float:
    """Time inside Poly-EPO's overrides minus the GRPOTrainer methods they call, per step."""
    spent: dict[str, float] = defaultdict(float)
    per_step: list[float] = []

    def timed(cls, name: str, key: str) -> None:
        original = cls.__dict__[name]

        def wrapper(self, *args, **kwargs):
            synchronize()
            start = time.perf_counter()
            try:
                return original(self, *args, **kwargs)
            finally:
                synchronize()
                spent[key] += time.perf_counter() - start
                if key == "ours/_generate_and_score_completions":
                    ours = sum(v for k, v in spent.items() if k.startswith("ours/"))
                    theirs = sum(v for k, v in spent.items() if k.startswith("trl/"))
                    per_step.append(ours - theirs)
                    spent.clear()

        setattr(cls, name, wrapper)

    for name in ("_generate", "_calculate_rewards", "_generate_and_score_completions"):
        timed(GRPOTrainer, name, f"trl/{name}")
    timed(poly_epo_trainer.PolyEPOTrainer, "_generate", "ours/_generate")
    timed(poly_epo_trainer.PolyEPOTrainer, "_calculate_rewards", "ours/_calculate_rewards")
    timed(poly_epo_trainer.PolyEPOTrainer, "_generate_and_score_completions", "ours/_generate_and_score_completions")

    def instant_reward(completions, **kwargs):
        return [float(len(c) % 3) for c in completions]

    def instant_judge(prompt, completions):
        return [len(c) % 3 for c in completions]

    with tempfile.TemporaryDirectory() as out:
        run("poly_epo", model_dir, out, 1024, steps, instant_reward, instant_judge, device)
    ms = [1000 * s for s in per_step[1:]]
    median = statistics.median(ms)
    print(f"2. 128 groups x 8 rollouts, instant reward and judge: Poly-EPO adds {median:.2f} ms per step")
    print(f"   (median of {len(ms)} steps; all: {', '.join(f'{m:.2f}' for m in ms)} ms; goal < 5 ms)")
    return median


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--latency", type=float, default=1.0)
    args = parser.parse_args()
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as folder:
        model_dir = save_tiny_model(Path(folder) / "model")
        overlap(model_dir, args.rounds, args.steps, args.latency)
        overhead(model_dir, args.steps)


if __name__ == "__main__":
    main()
