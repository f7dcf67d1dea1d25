"""What the log-prob channel costs a step: the real-LM benchmark's recipe (SmolLM2-135M-Instruct, names by initial, 8
prompts x 8 rollouts) trained a few steps with Dr.GRPO and with a method that reads each completion's sampling
log-probability (UCPO, unlikeliness), each in a process of its own on every core; the median step and the median
``time/logprobs`` (the door's one no-grad pass, with transformers generation), the first step left out.

    python benchmarks/logprob_channel.py [--steps 6] [--methods grpo ucpo unlikeliness] [--out DIR]

Prints one line per method and the ratio of each step to Dr.GRPO's, measured in this one run. With vLLM generation
the door reads the sampling log-probabilities vLLM returns and makes no pass of its own.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from real_lm import ROOT, Settings, hardware, recipe, warm_start

TRAIN = """
import json, sys
from poly_epo_trl.commands.train import main
trainer = main(sys.argv[2:])
json.dump(trainer.state.log_history, open(sys.argv[1], "w"))
"""


def timed(method: str, steps: int, start: str, folder: Path) -> dict[str, float]:
    """Median step and median time/logprobs of ``steps`` steps of ``method`` (the first left out)."""
    s = Settings(steps=steps, curve_every=10_000, backend="transformers", workers=1)
    argv = [*recipe(method, 0, s, start, folder), "--logging_steps", "1", "--eval_at_start", "false"]
    history = folder / f"{method}.json"
    env = {**os.environ, "OMP_NUM_THREADS": str(len(os.sched_getaffinity(0))), "TOKENIZERS_PARALLELISM": "false"}
    subprocess.run(
        [sys.executable, "-c", TRAIN, str(history), *argv], env=env, check=True, cwd=ROOT, stdout=subprocess.DEVNULL
    )
    logs = [row for row in json.loads(history.read_text()) if "step_time" in row][1:]
    return {
        "step": statistics.median(row["step_time"] for row in logs),
        "logprobs": statistics.median(row.get("time/logprobs", 0.0) for row in logs),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--methods", nargs="+", default=["grpo", "ucpo", "unlikeliness"])
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="logprob-channel-"))
    start = warm_start(Settings(), out)
    results = {method: timed(method, args.steps, start, out / method) for method in args.methods}
    base = results[args.methods[0]]["step"]
    print(f"{hardware()}, {args.steps} steps each (the first left out), medians; ratios measured in this run:")
    for method, r in results.items():
        print(
            f"  {method:14s} step {r['step']:.2f} s ({r['step'] / base:.3f}x {args.methods[0]}'s), "
            f"the door {1000 * r['logprobs']:.0f} ms"
        )
    (out / "logprob_channel.json").write_text(json.dumps({"hardware": hardware(), "results": results}, indent=1))


if __name__ == "__main__":
    main()
