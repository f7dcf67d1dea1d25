"""One generation batch's state, from TRL's ``_generate`` to ``_generate_and_score_completions``: the judging under
way, the judged groups, and the advantages that replace TRL's. The trainer keeps one ``Step``; nothing else of a
step lives on the trainer."""

from __future__ import annotations

import concurrent.futures
import logging
from dataclasses import dataclass
from typing import Any

import torch

from ..judges import JudgeResult

logger = logging.getLogger(__name__)


@dataclass
class Generated:
    """What TRL's ``_generate`` returned besides the decoded texts, as the judge may read it: this process's prompt
    and completion token ids, the ``env_mask`` (1 on the model's tokens, 0 on the environment's; None without one)
    and a ``rollout_func``'s extra fields."""

    prompt_ids: list
    completion_ids: list
    env_mask: list | None
    extra_fields: dict[str, Any]

    @classmethod
    def of(cls, output: tuple) -> Generated:
        """From ``_generate``'s output, laid out as TRL 1.16 lays it out (``tests/test_trl_seams.py`` pins it)."""
        return cls(output[0], output[1], output[2], output[5])


@dataclass
class PendingJudge:
    """Judging under way for one generation batch: the gathered texts, the groups (of ``group_size``) this process
    owns, their future."""

    group_size: int
    prompts: list[str]
    completions: list[Any]
    owned: list[int]
    future: concurrent.futures.Future
    waited: float = 0.0  # seconds the main thread waited for the verdicts: what the judge cost the step


@dataclass
class SetBatch:
    """What the advantages of one generation batch were computed from (all processes, [G, N], on the host; texts per
    row)."""

    rewards: torch.Tensor
    cluster_ids: torch.Tensor
    advantages: torch.Tensor
    mode: str
    prompts: list[str]
    completions: list[str]  # as judges read them by default (``text.trajectory_text``)
    inputs: list[Any]  # as judges take them (``text.judge_input``: strings, or an agent's messages)
    verdicts: list[JudgeResult | None]  # per group; None for groups of one, which are not judged

    @property
    def fallbacks(self) -> list[str | None]:
        """Each group's fallback (None where a judge answered)."""
        return [v.fallback if v is not None else None for v in self.verdicts]


@dataclass
class Step:
    """A generation batch in ``mode`` ("train" or "eval") with groups of ``group_size``: ``pending`` from
    ``_generate`` (None for groups of one, or without a judge), ``batch`` and ``advantages`` (all processes' rows,
    flat; None keeps TRL's own) from ``_calculate_rewards``. The batch and the advantages live on the host."""

    mode: str
    group_size: int
    pending: PendingJudge | None = None
    batch: SetBatch | None = None
    advantages: torch.Tensor | None = None


def replace_advantages(trainer: Any, output: dict[str, Any], advantages: torch.Tensor) -> dict[str, Any]:
    """TRL's places for a step's advantages, given ``advantages`` (all processes' rows): this process's slice into
    ``output["advantages"]`` (what the loss reads) and the whole batch into the completions table's log, in place
    of the batch's GRPO advantages TRL just logged there (its newest entries)."""
    local = output["advantages"]
    start = trainer.accelerator.process_index * len(local)
    output["advantages"] = advantages[start : start + len(local)].to(device=local.device, dtype=local.dtype)
    logged = trainer._logs["advantages"]
    for _ in range(min(len(advantages), len(logged))):
        logged.pop()
    logged.extend(advantages.tolist())
    return output


def to_host(tensor: torch.Tensor) -> torch.Tensor:
    """A detached CPU copy of ``tensor``: the one read of the device a step's bookkeeping makes (a read from a GPU
    waits for every kernel queued before it, so the step's path reads once, here, and keeps the rest on the host)."""
    return tensor.detach().to("cpu")


def unscore_infinite(
    trainer: Any, rewards: torch.Tensor, host: torch.Tensor, mode: str
) -> tuple[torch.Tensor, torch.Tensor]:
    """Rewards of +inf or -inf as not scored (NaN, like a reward function's None), on the device (``rewards``,
    without reading it) and on the host (``host``, its copy), counted in ``rewards/non_finite`` and warned about once
    a run, instead of letting them turn a group's advantages, then every weight, into NaN."""
    infinite = torch.isinf(host)
    count = int(infinite.sum())
    trainer._metrics[mode]["rewards/non_finite"].append(count)
    if not count:
        return rewards, host
    if "non_finite" not in trainer.said:
        trainer.said.add("non_finite")
        names = [
            name for name, bad in zip(trainer.reward_func_names, infinite.any(dim=0).tolist(), strict=False) if bad
        ]
        logger.warning(
            "Reward functions %s returned +inf or -inf for %d completions: they count as not scored (like None); "
            "rewards/non_finite counts them every step. Return a finite number or None.",
            names,
            count,
        )
    return rewards.masked_fill(torch.isinf(rewards), torch.nan), host.masked_fill(infinite, torch.nan)
