"""What an audit judge costs a step: the tiny CPU recipe (the toy sum task, groups of 8, its pair judge training)
trained a few steps without an audit and with an audit at every step (``audit_every: 1``, ``audit_groups: 4``) by
the answer judge and by the embedding judge (MiniLM sentence embeddings, offline), each in one process; the median
step, the median ``judge_audit/seconds`` (the audit judge's own time, which overlaps TRL's log-probabilities and
rewards) and the step's ratio to the unaudited one, measured in one run.

    python benchmarks/judge_audit.py [--steps 12]
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

ROOT = Path(__file__).resolve().parent.parent
TRAIN = """
import json, sys
from poly_epo_trl.commands.train import main
trainer = main(sys.argv[2:])
json.dump(trainer.state.log_history, open(sys.argv[1], "w"))
"""


def timed(audit: str | None, steps: int, folder: Path) -> dict[str, float]:
    """Median step and median audit seconds of ``steps`` steps (the first left out)."""
    argv = ["--config", "recipes/tiny/poly_epo/config_cpu.yaml", "--max_steps", str(steps), "--logging_steps", "1"]
    argv += ["--output_dir", str(folder), "--disable_tqdm", "true", "--log_level", "error"]
    if audit is not None:
        argv += ["--audit_judge", audit, "--audit_every", "1", "--audit_groups", "4"]
    history = folder.with_suffix(".json")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false", "HF_HUB_OFFLINE": "1"}
    subprocess.run([sys.executable, "-c", TRAIN, str(history), *argv], env=env, check=True, cwd=ROOT,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    logs = [row for row in json.loads(history.read_text()) if "step_time" in row][1:]
    return {
        "step": statistics.median(row["step_time"] for row in logs),
        "audit": statistics.median(row.get("judge_audit/seconds", 0.0) for row in logs),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=12)
    args = parser.parse_args()
    out = Path(tempfile.mkdtemp(prefix="judge-audit-"))
    results = {name: timed(audit, args.steps, out / name) for name, audit in
               (("no audit", None), ("answer", "answer"), ("embedding", "embedding"))}  # fmt: skip
    base = results["no audit"]["step"]
    cores = len(os.sched_getaffinity(0))
    print(f"{cores} CPU cores, one process each, {args.steps} steps (the first left out), medians:")
    for name, r in results.items():
        print(
            f"  {name:10s} step {1000 * r['step']:.0f} ms ({r['step'] / base:.2f}x), audit {1000 * r['audit']:.0f} ms"
        )


if __name__ == "__main__":
    main()
