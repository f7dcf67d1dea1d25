"""An agent trained with vLLM generation, in its own process: the agent task's warm start calls ``submit`` on
``GoldbachEnvironment`` (``environment_factory``), TRL's tool loop runs on the engine's generations: a colocated
engine, or ``trl vllm-serve`` on a port.

``python vllm_agent_run.py <out_dir> <trainer> [<server port>]`` trains two steps and writes ``result.json``: the
per-step log and every trajectory the judge received (as messages)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from tiny import small_config

from poly_epo_trl import GRPODivTrainer, PolyEPOConfig, PolyEPOTrainer
from poly_epo_trl.models import resolve_model
from poly_epo_trl.tasks.goldbach_agent import GoldbachEnvironment, plan_judge, rows

TRAINERS = {"poly_epo": PolyEPOTrainer, "grpo_div": GRPODivTrainer}


def agent_config(out: Path, server_port: int | None = None, **overrides) -> PolyEPOConfig:
    """Two steps of 2 sums x 8 rollouts from the agent warm start, on a colocated float32 engine or the server on
    ``server_port``; ``overrides`` for the rest."""
    settings = dict(
        per_device_train_batch_size=16,
        learning_rate=1e-3,
        bf16=False,
        activation_checkpointing=False,
        use_vllm=True,
        vllm_mode="server" if server_port else "colocate",
        vllm_server_base_url=f"http://127.0.0.1:{server_port}" if server_port else None,
        vllm_server_timeout=120,
        # the server's sampling is seeded per request, as a colocated engine is by the run's seed: the same
        # rollouts whatever the server answered before
        generation_kwargs={"seed": 0} if server_port else None,
        vllm_gpu_memory_utilization=0.15,
        vllm_max_model_length=256,
        vllm_dtype="policy",  # the engine samples in float32: sampling and training log-probs agree
        vllm_enforce_eager=True,
    )
    return small_config(out / "run", **{**settings, **overrides})


def main(out: Path, trainer_name: str, server_port: int | None = None) -> None:
    os.environ["TRL_EXPERIMENTAL_SILENCE"] = "1"
    received: list = []

    def recording_plan_judge(prompt: str, completions: list) -> list[int]:
        received.extend(completions)
        return plan_judge(prompt, completions)

    args = agent_config(out, max_completion_length=96, max_tool_calling_iterations=1, server_port=server_port)
    trainer = TRAINERS[trainer_name](
        model=resolve_model("builtin:goldbach_agent"),
        args=args,
        train_dataset=rows("train"),
        environment_factory=GoldbachEnvironment,
        judge=recording_plan_judge,
    )
    trainer.train()
    result = {"log_history": trainer.state.log_history, "received": received}
    (out / "result.json").write_text(json.dumps(result))


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else None)
