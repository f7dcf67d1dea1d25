"""Per-step time of each distributed engine against DDP, measured in one run: the shipped accelerate configs with
2 processes on CPU (gloo), training the tiny CPU recipe.

Usage: .venv/bin/python benchmarks/engines.py [--steps 20] [--train-args --per_device_train_batch_size 32 ...]

Each engine (DDP, DeepSpeed ZeRO-2, ZeRO-3, FSDP2) trains ``--steps`` steps; the median ``step_time`` TRL logs (the
first step left out) of each, and its ratio to DDP's. FSDP on CPU goes through the tests' shim
(``tests/helpers/fsdp_on_cpu.py``: accelerate runs FSDP only on GPUs). On a model this small the engines' bookkeeping
is what is measured, not their memory savings: ZeRO-3 and FSDP pay for gathering parameters each step, which on GPUs
buys room for models that DDP cannot hold.
"""

from __future__ import annotations

import argparse
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONFIGS = ROOT / "recipes" / "accelerate_configs"
ENGINES = {"DDP": "ddp.yaml", "DeepSpeed ZeRO-2": "zero2.yaml", "DeepSpeed ZeRO-3": "zero3.yaml", "FSDP2": "fsdp.yaml"}
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def step_times(name: str, steps: int, extra: list[str], out: Path) -> list[float]:
    """Train with the engine's shipped config; the logged step times."""
    shim = ROOT / "tests" / "helpers" / "fsdp_on_cpu.py"
    target = [str(shim)] if name == "FSDP2" else ["-m", "poly_epo_trl.commands.train"]
    argv = [sys.executable, "-m", "accelerate.commands.launch", "--config_file", str(CONFIGS / ENGINES[name])]
    argv += ["--num_processes", "2", "--mixed_precision", "no", "--main_process_port", str(free_port()), *target]
    argv += ["--config", "recipes/tiny/poly_epo/config_cpu.yaml", "--max_steps", str(steps), "--logging_steps", "1"]
    argv += ["--save_strategy", "no", "--output_dir", str(out), *extra]
    done = subprocess.run(argv, cwd=ROOT, env=ENV, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{name} failed:\n{(done.stdout + done.stderr)[-3000:]}")
    expected = f"engine: {name} on 2 processes"
    if expected not in done.stdout:
        sys.exit(f"{name}: the run did not say '{expected}'")
    return [float(t) for t in re.findall(r"'step_time': '([^']+)'", done.stdout)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--train-args", nargs=argparse.REMAINDER, default=[], help="recipe overrides (last)")
    args = parser.parse_args()
    medians = {}
    with tempfile.TemporaryDirectory() as scratch:
        for name in ENGINES:
            times = step_times(name, args.steps, args.train_args, Path(scratch) / name.replace(" ", "_"))
            medians[name] = statistics.median(times[1:])
            print(f"{name:18s} median step {medians[name]:.3f} s over {len(times) - 1} steps", flush=True)
    print(f"\n{'engine':18s} {'step (s)':>9s} {'vs DDP':>7s}")
    for name, median in medians.items():
        print(f"{name:18s} {median:9.3f} {median / medians['DDP']:6.2f}x")


if __name__ == "__main__":
    main()
