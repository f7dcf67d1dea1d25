"""Preemption and restarts on the CPU recipe (recipes/tiny/poly_epo/config_cpu.yaml, 40 steps, checkpoints every 10),
measured in one run: max |w - w_ref| after kill -9 + restart and after SIGTERM + restart, against an uninterrupted
run with the same seed; the steps kept at SIGTERM; the seconds from SIGTERM to exit.

Usage: python benchmarks/long_runs.py [--repeats 3] [--buffered]
Goals: max |dw| <= 1e-6; every step done before the signal kept; exit within preemption_grace_seconds.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from safetensors.torch import load_file

ROOT = Path(__file__).resolve().parent.parent
BASE = ["--config", "recipes/tiny/poly_epo/config_cpu.yaml", "--max_steps", "40", "--save_strategy", "steps"]
BASE += ["--save_steps", "10", "--logging_steps", "1"]
BUFFERED = ["--steps_per_generation", "2", "--num_iterations", "2", "--gradient_accumulation_steps", "2"]
BUFFERED += ["--per_device_train_batch_size", "32"]
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}


def start(output_dir: Path, extra: list[str]) -> tuple[subprocess.Popen, list[int], list[str]]:
    argv = [sys.executable, "-m", "poly_epo_trl.commands.train", *BASE, *extra, "--output_dir", str(output_dir)]
    process = subprocess.Popen(argv, cwd=ROOT, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    steps, lines = [0], []

    def read() -> None:
        for line in process.stdout:
            lines.append(line)
            steps[0] += line.count("'loss':")

    threading.Thread(target=read, daemon=True).start()
    return process, steps, lines


def wait_for(steps: list[int], step: int) -> None:
    while steps[0] < step:
        time.sleep(0.005)


def max_dw(a: Path, b: Path) -> float:
    left, right = load_file(a / "model.safetensors"), load_file(b / "model.safetensors")
    return max((left[k].double() - right[k].double()).abs().max().item() for k in left)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--buffered", action="store_true", help="steps_per_generation 2, num_iterations 2")
    args = parser.parse_args()
    extra = BUFFERED if args.buffered else []
    rng = random.Random()
    with tempfile.TemporaryDirectory() as tmp:
        reference = Path(tmp) / "reference"
        process, _, lines = start(reference, extra)
        if process.wait() != 0:
            sys.exit("".join(lines))
        print(f"shape: {'buffered (steps_per_generation 2, num_iterations 2)' if args.buffered else 'plain'}")
        for repeat in range(args.repeats):
            out = Path(tmp) / f"kill-{repeat}"
            step = rng.randint(11, 38)
            process, steps, _ = start(out, extra)
            wait_for(steps, step)
            process.kill()
            process.wait()
            process, _, _ = start(out, extra)
            process.wait()
            print(f"kill -9 after step {step:2d}, restart: max |dw| = {max_dw(reference, out):.3g}")
        for repeat in range(args.repeats):
            out = Path(tmp) / f"term-{repeat}"
            step = rng.randint(11, 38)
            process, steps, lines = start(out, extra)
            wait_for(steps, step)
            seen, sent = steps[0], time.monotonic()
            process.send_signal(signal.SIGTERM)
            code = process.wait()
            seconds = time.monotonic() - sent
            text = "".join(lines)
            found = re.search(r"stopped by SIGTERM after step (\d+)", text)
            stopped = int(found.group(1)) if found else None
            process, _, _ = start(out, extra)
            process.wait()
            print(
                f"SIGTERM after {seen:2d} logged steps: exit code {code}, {seconds:.2f} s to exit, checkpoint at step "
                f"{stopped} (kept {'every' if stopped is not None and stopped >= seen else 'NOT every'} step done); "
                f"restart: max |dw| = {max_dw(reference, out):.3g}"
            )


if __name__ == "__main__":
    main()
