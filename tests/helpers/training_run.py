"""``python -m poly_epo_trl.train`` as a child process of a test, and the weights of two runs compared."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from safetensors.torch import load_file

ROOT = Path(__file__).resolve().parents[2]
RECIPE = "recipes/tiny/poly_epo/config_cpu.yaml"
BASE = ["--max_steps", "40", "--save_strategy", "steps", "--save_steps", "10", "--logging_steps", "1"]
ENV = {
    **os.environ,
    "OMP_NUM_THREADS": "1",
    "HF_HUB_OFFLINE": "1",
    "TOKENIZERS_PARALLELISM": "false",
    "PYTHONPATH": str(ROOT / "tests" / "helpers"),
}


class Run:
    """``python -m poly_epo_trl.train`` as a child process, counting the steps it has logged."""

    def __init__(self, output_dir: Path, *extra: str) -> None:
        argv = [sys.executable, "-m", "poly_epo_trl.train", "--config", RECIPE, *BASE, *extra]
        argv += ["--output_dir", str(output_dir)]
        self.process = subprocess.Popen(
            argv, cwd=ROOT, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        self.steps = 0
        self.lines: list[str] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        for line in self.process.stdout:
            self.lines.append(line)
            self.steps += line.count("'loss':")

    def wait_for_step(self, step: int, timeout: float = 300) -> None:
        deadline = time.monotonic() + timeout
        while self.steps < step:
            assert self.process.poll() is None, self.output()
            assert time.monotonic() < deadline, f"no step {step} in {timeout} s"
            time.sleep(0.005)

    def wait_for_text(self, text: str, timeout: float = 60) -> None:
        """Until the run has printed ``text`` (its output is read as it comes)."""
        deadline = time.monotonic() + timeout
        while text not in self.output():
            assert self.process.poll() is None, self.output()
            assert time.monotonic() < deadline, f"no {text!r} in {timeout} s: {self.output()[-2000:]}"
            time.sleep(0.005)

    def finish(self, timeout: float = 300) -> int:
        code = self.process.wait(timeout)
        self.reader.join(10)
        return code

    def output(self) -> str:
        return "".join(self.lines)

    def sigterm(self) -> tuple[int, float, str]:
        """Send SIGTERM and wait: the exit code, the seconds from the signal to the exit, the whole output."""
        sent = time.monotonic()
        self.process.send_signal(signal.SIGTERM)
        code = self.finish()
        return code, time.monotonic() - sent, self.output()


def max_difference(a: Path, b: Path) -> float:
    left, right = load_file(a), load_file(b)
    assert left.keys() == right.keys()
    return max((left[k].double() - right[k].double()).abs().max().item() for k in left)
