"""A ``rollout_func`` that plays its own two-turn episodes on a colocated vLLM engine, in its own process, as TRL's
OpenEnv examples do: the agent task's warm start writes a ``submit`` call (turn 1, vLLM), the rollout function runs
it on a ``GoldbachEnvironment`` and appends the environment's answer as a tool turn (``env_mask`` 0: not the
model's), the model writes its last word (turn 2, vLLM). The environment's reward, and whether the pair sums to S,
reach the reward functions as extra fields; the episode's messages reach the judge as the ``trajectory`` field.

``python vllm_rollout_run.py <out_dir> <trainer>`` trains three steps and writes ``result.json``: the per-step log,
what the judge received, each episode (S and the pair submitted), and the last batch's rewards, cluster ids and
advantages."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from trl.chat_template_utils import add_response_schema, parse_response
from vllm_agent_run import agent_config

from poly_epo_trl import GRPODivTrainer, PolyEPOTrainer
from poly_epo_trl.models import resolve_model
from poly_epo_trl.tasks.goldbach_agent import GoldbachEnvironment, plan_judge, rows, submitted_pair

TRAINERS = {"poly_epo": PolyEPOTrainer, "grpo_div": GRPODivTrainer}


EPISODES: list[dict] = []


def rollout(prompts: list, trainer) -> dict:
    """Two model turns around one tool turn per rollout; ``env_mask`` marks the tool turn's tokens as not the
    model's, ``logprobs`` are the engine's (0 for the tool turn)."""
    tokenizer = trainer.processing_class
    tools = [GoldbachEnvironment().submit]  # rendered into the system turn, as TRL's tool loop renders them
    first = [
        tokenizer.apply_chat_template(p, tools=tools, add_generation_prompt=True, tokenize=True, return_dict=False)
        for p in prompts
    ]
    _, turn1, logprobs1, _ = trainer.vllm_generation.generate(first, None, trainer.num_generations)
    environments, feedback, sums, trajectories = [], [], [], []
    for prompt, prompt_ids, ids in zip(prompts, first, turn1, strict=True):
        total = int(prompt[-1]["content"].removeprefix("S=").removesuffix(":"))
        environment = GoldbachEnvironment()
        environment.reset(total=total)
        said = parse_response(tokenizer, ids, prefix=prompt_ids, tools=tools)
        pair = submitted_pair([said])
        answer = environment.submit(*pair) if pair else "no submission"
        result = {"role": "tool", "name": "submit", "content": answer} if pair else {"role": "user", "content": answer}
        trajectories.append([said, result])
        EPISODES.append({"total": total, "pair": pair})
        sums.append(float(pair is not None and sum(pair) == total))
        tool_turn = f"<|im_start|>user\n<tool_response>\n{answer}\n</tool_response><|im_end|>\n<|im_start|>assistant\n"
        feedback.append(tokenizer(tool_turn, add_special_tokens=False)["input_ids"])
        environments.append(environment)
    second = [p + a + f for p, a, f in zip(first, turn1, feedback, strict=True)]
    _, turn2, logprobs2, _ = trainer.vllm_generation.generate(second, None, 1)
    out: dict = {"prompt_ids": first, "completion_ids": [], "logprobs": [], "env_mask": [], "episode_reward": []}
    out["sums_to_total"] = sums
    out["trajectory"] = trajectories  # what the judge reads: the episode's messages, roles and all
    for a, f, b, la, lb, environment, trajectory in zip(
        turn1, feedback, turn2, logprobs1, logprobs2, environments, trajectories, strict=True
    ):
        trajectory.append({"role": "assistant", "content": tokenizer.decode(b, skip_special_tokens=True)})
        out["completion_ids"].append(a + f + b)
        out["logprobs"].append([lp[0] for lp in la] + [0.0] * len(f) + [lp[0] for lp in lb])
        out["env_mask"].append([1] * len(a) + [0] * len(f) + [1] * len(b))
        out["episode_reward"].append(environment.get_reward())
    return out


def main(out: Path, trainer_name: str) -> None:
    os.environ["TRL_EXPERIMENTAL_SILENCE"] = "1"
    received: list = []

    def recording_plan_judge(prompt: str, completions: list) -> list[int]:
        received.extend(completions)
        return plan_judge(prompt, completions)

    def episode_reward(completions: list, episode_reward: list[float], **kwargs) -> list[float]:
        return episode_reward

    def sum_reward(completions: list, sums_to_total: list[float], **kwargs) -> list[float]:
        return [0.5 * x for x in sums_to_total]

    args = agent_config(out, per_device_train_batch_size=32, max_completion_length=48, max_steps=3)
    model = resolve_model("builtin:goldbach_agent")
    trainer = TRAINERS[trainer_name](
        model=model,
        reward_funcs=[episode_reward, sum_reward],
        args=args,
        train_dataset=rows("train"),
        rollout_func=rollout,
        judge=recording_plan_judge,
    )
    add_response_schema(trainer.processing_class)
    trainer.train()
    batch = trainer.last_set_batch
    result = {
        "log_history": trainer.state.log_history,
        "received": received,
        "episodes": EPISODES,
        "rewards": batch.rewards.tolist(),
        "cluster_ids": batch.cluster_ids.tolist(),
        "advantages": batch.advantages.tolist() if batch.advantages is not None else None,
    }
    (out / "result.json").write_text(json.dumps(result))


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2])
