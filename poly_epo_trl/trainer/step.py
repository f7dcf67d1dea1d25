"""One generation batch's state, from TRL's ``_generate`` to ``_generate_and_score_completions``: the judging under
way, the judged groups, and the advantages that replace TRL's. The trainer keeps one ``Step``; nothing else of a
step lives on the trainer."""

from __future__ import annotations

import concurrent.futures
import logging
from dataclasses import dataclass
from typing import Any

import torch
from accelerate.utils import gather_object

from ..constants import DEGENERATE_CLUSTER_ID
from ..judges.base import distinct_labels
from ..methods import SetBatch
from ..text import judge_input, prompt_text, trajectory_text

logger = logging.getLogger(__name__)


@dataclass
class Generated:
    """What TRL's ``_generate`` returned besides the decoded texts, as the judge and the log-prob channel read it: this
    process's prompt and completion token ids, the ``env_mask`` (1 on the model's tokens, 0 on the environment's;
    None without one), a ``rollout_func``'s extra fields, and the per-token sampling log-probabilities vLLM returned
    (None for transformers generation)."""

    prompt_ids: list
    completion_ids: list
    env_mask: list | None
    extra_fields: dict[str, Any]
    sampling_logps: list | None = None

    @classmethod
    def of(cls, output: tuple) -> Generated:
        """From ``_generate``'s output, laid out as TRL 1.16 lays it out (``tests/test_trl_seams.py`` pins it)."""
        return cls(output[0], output[1], output[2], output[5], output[4])


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
    audit_owned: list[int] | None = None  # the groups this process's audit judge labels (None: not an audited step)
    audit_future: concurrent.futures.Future | None = None


@dataclass
class Step:
    """A generation batch in ``mode`` ("train" or "eval") with groups of ``group_size``: ``pending`` from
    ``_generate`` (None for groups of one, or without a judge), ``batch`` and ``advantages`` (all processes' rows,
    flat; None keeps TRL's own) from ``_calculate_rewards``. The batch and the advantages live on the host. For a
    method that reads log-probabilities, what the log-prob channel reads (``trainer.logprobs``)."""

    mode: str
    group_size: int
    pending: PendingJudge | None = None
    batch: SetBatch | None = None
    advantages: torch.Tensor | None = None
    generated: Generated | None = None  # this process's ids (and vLLM's log-probs), for the log-prob channel
    awaiting_old_logps: bool = False  # TRL's next log-prob pass is its old_per_token_logps, to be kept
    old_logps: torch.Tensor | None = None  # TRL's old_per_token_logps of this process's rows, where it computed them


def gather_texts(prompts: list, completions: list) -> tuple[list[str], list[Any]]:
    """The whole batch's problem texts and completions as judges take them, on every process (a collective):
    strings, or an agent's chat messages with their tool calls and results (``text.judge_input``); each judge reads
    its own view of them (``ClusteringJudge.view``)."""
    return gather_object([prompt_text(p) for p in prompts]), gather_object([judge_input(c) for c in completions])


def set_batch(
    step: Step,
    rewards: torch.Tensor,
    weights: torch.Tensor,
    prompts: list[str],
    completions: list[Any],
    cluster_ids: torch.Tensor | None = None,
    verdicts: list | None = None,
    degenerate_cluster_id: int = DEGENERATE_CLUSTER_ID,
) -> SetBatch:
    """The gathered batch as groups of ``step.group_size``, on the host: the total reward [G, N] of the reward columns
    ``rewards`` (the host's copy) weighted by ``weights`` (NaN where no reward function scored the row), the
    judge's ids [G, N] and verdicts (without a judge: each rollout its own cluster, none of them the run's
    ``degenerate_cluster_id``, no verdicts), the texts; advantages left NaN for the method."""
    total = (rewards * weights.to(rewards.device)).nansum(dim=1)
    total[torch.isnan(rewards).all(dim=1)] = torch.nan
    total = total.view(-1, step.group_size)
    if cluster_ids is None:
        own = torch.tensor(distinct_labels(step.group_size, degenerate_cluster_id))
        cluster_ids = own.expand(total.shape[0], -1).clone()
    groups = [None] * total.shape[0] if verdicts is None else verdicts
    texts = [trajectory_text(c) for c in completions]
    nan = torch.full_like(total, torch.nan)
    return SetBatch(total, cluster_ids, nan, step.mode, prompts, texts, completions, groups, degenerate_cluster_id)


def replace_advantages(
    output: dict[str, Any], advantages: torch.Tensor, process_index: int, logged: list[float]
) -> dict[str, Any]:
    """TRL's places for a step's advantages, given ``advantages`` (all processes' rows): this process's slice (it is
    process ``process_index``) into ``output["advantages"]`` (what the loss reads) and the whole batch into
    ``logged``, the completions table's advantages column, in place of the batch's GRPO advantages TRL just logged
    there (its newest entries)."""
    local = output["advantages"]
    start = process_index * len(local)
    output["advantages"] = advantages[start : start + len(local)].to(device=local.device, dtype=local.dtype)
    for _ in range(min(len(advantages), len(logged))):
        logged.pop()
    logged.extend(advantages.tolist())
    return output


def to_host(tensor: torch.Tensor) -> torch.Tensor:
    """A detached CPU copy of ``tensor``: the one read of the device a step's bookkeeping makes (a read from a GPU
    waits for every kernel queued before it, so the step's path reads once, here, and keeps the rest on the host)."""
    return tensor.detach().to("cpu")


def unscore_infinite(rewards: torch.Tensor, host: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, list[int]]:
    """Rewards of +inf or -inf as not scored (NaN, like a reward function's None), on the device (``rewards``,
    without reading it) and on the host (``host``, its copy), instead of letting them turn a group's advantages, then
    every weight, into NaN; and how many each reward column had."""
    infinite = torch.isinf(host)
    counts = [int(c) for c in infinite.sum(dim=0).tolist()]  # host: [completions, reward columns]
    if not any(counts):
        return rewards, host, counts
    return rewards.masked_fill(torch.isinf(rewards), torch.nan), host.masked_fill(infinite, torch.nan), counts


class OnceWarnings:
    """The warnings a run says once each, by key: the one warn-once of the trainer and its collaborators."""

    def __init__(self) -> None:
        self.said: set[str] = set()

    def warn(self, key: str, message: str, *args: Any) -> None:
        if key not in self.said:
            self.said.add(key)
            logger.warning(message, *args)
