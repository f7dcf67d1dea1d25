"""The CPU agent example: the demo (``demo.run``) on the agent task, GRPO against Poly-EPO.

    python -m poly_epo_trl.demo.agent                    # 1 seed, GRPO and Poly-EPO
    python -m poly_epo_trl.demo.agent --seeds 0 1 2 3 4

The task (``tasks.goldbach_agent``): asked for ``S=<S>:``, the agent calls ``submit(p, q)`` on a
``GoldbachEnvironment``, which owns the reward (1 when p and q are primes summing to S). Its plan is the pair it
submits; the judge clusters trajectories by plan. Each method is a recipe through ``train`` with
``environment_factory``; held-out sums are played by ``evaluation``'s episode player, as training plays them (the same
environment, TRL's parser and tool suffix, ``max_tool_calling_iterations`` from the task). Writes results.json and
demo.png to --out.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from poly_epo_trl.commands.demo.run import DemoSettings
from poly_epo_trl.commands.demo.run import main as demo_main

AGENT = DemoSettings(
    task="goldbach_agent",
    steps=150,
    learning_rate=1e-4,  # at the text demo's 6e-4 both methods collapsed by drift in some seeds
    curve_samples=8,
    curve_every=50,
    methods=["grpo", "poly_epo"],
)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    return demo_main(argv, AGENT, Path("outputs/agent"))


if __name__ == "__main__":
    main()
