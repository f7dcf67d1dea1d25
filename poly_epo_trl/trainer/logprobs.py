"""The log-prob channel: each completion's summed token log-probability under the policy that sampled it, and its
token count, for the methods that read them (``Method.reads_logprobs``) and only for those.

Taken from what TRL already computed, where it did:

1. the sampling log-probabilities vLLM returns with every generation (TRL's ``_generate``, its 5th output);
2. ``old_per_token_logps``, which TRL computes with the sampling weights before the rewards when a generation batch
   is trained on over several steps (``gradient_accumulation_steps`` not a multiple of ``steps_per_generation x
   num_iterations``; ``old_logps_computed``);
3. otherwise one no-grad forward pass of the model over the batch, at the sampling temperature, as TRL computes its
   own log-probabilities (``forward_logprobs``).

An agent's tool results are the environment's tokens, not the policy's: they are left out of the sum and the count
(TRL's ``tool_mask``, which it also gives a sampling log-probability of 0).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch


def old_logps_computed(gradient_accumulation_steps: int, steps_per_generation: int, num_iterations: int) -> bool:
    """Whether TRL's ``_generate_and_score_completions`` computes ``old_per_token_logps`` before the rewards without
    vLLM: a generation batch trained on over steps that do not line up with the optimizer's (TRL 1.16's condition,
    pinned by ``tests/test_trl_seams.py``)."""
    return gradient_accumulation_steps % (steps_per_generation * num_iterations) != 0


def model_mask(completion_ids: list, tool_mask: list | None) -> list[list[int]]:
    """Per completion, 1 on each token the policy sampled and 0 on a tool's."""
    if tool_mask is None:
        return [[1] * len(ids) for ids in completion_ids]
    return [list(mask) for mask in tool_mask]


def from_sampling(per_token: list, completion_ids: list, tool_mask: list | None) -> tuple[torch.Tensor, torch.Tensor]:
    """Sums and counts [B] from vLLM's per-token sampling log-probabilities (a None or NaN token, which vLLM could
    not score, counts as 0 in the sum)."""
    sums, lengths = [], []
    for logps, mask in zip(per_token, model_mask(completion_ids, tool_mask), strict=True):
        values = [0.0 if x is None or x != x else float(x) for x in logps]
        sums.append(sum(v * m for v, m in zip(values, mask, strict=False)))
        lengths.append(sum(mask))
    return torch.tensor(sums, dtype=torch.float64), torch.tensor(lengths, dtype=torch.float64)


def from_per_token(
    per_token: torch.Tensor, completion_ids: list, tool_mask: list | None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Sums and counts [B] from a padded [B, T] tensor of per-token log-probabilities (TRL's layout: completions
    right-padded), over each completion's own tokens."""
    masks = model_mask(completion_ids, tool_mask)
    mask = torch.zeros(per_token.shape, dtype=torch.float64)
    for row, values in enumerate(masks):
        mask[row, : len(values)] = torch.tensor(values, dtype=torch.float64)
    values = per_token.detach().to("cpu", torch.float64).nan_to_num(0.0)
    return (values * mask).sum(1), mask.sum(1)


def forward_logprobs(
    per_token_logps: Callable[..., Any],
    model: Any,
    prompt_ids: list,
    completion_ids: list,
    pad_token_id: int,
    device: Any,
    batch_size: int,
) -> torch.Tensor:
    """[B, T] per-token log-probabilities of the completions under ``model``, by ``per_token_logps`` (TRL's
    ``_get_per_token_logps_and_entropies``, which divides the logits by the sampling temperature), without gradients:
    the prompts left-padded and the completions right-padded, as TRL lays them out."""
    from trl.models.utils import disable_gradient_checkpointing
    from trl.trainer.utils import pad

    prompts = [torch.tensor(ids) for ids in prompt_ids]
    completions = [torch.tensor(ids) for ids in completion_ids]
    prompt = pad(prompts, padding_value=pad_token_id, padding_side="left").to(device)
    prompt_mask = pad([torch.ones_like(p) for p in prompts], padding_value=0, padding_side="left").to(device)
    completion = pad(completions, padding_value=pad_token_id, padding_side="right").to(device)
    completion_mask = pad([torch.ones_like(c) for c in completions], padding_value=0, padding_side="right").to(device)
    with torch.no_grad(), disable_gradient_checkpointing(model, None):
        logps, _, _ = per_token_logps(
            model,
            torch.cat([prompt, completion], dim=1),
            torch.cat([prompt_mask, completion_mask], dim=1),
            completion.size(1),
            batch_size=batch_size,
        )
    return logps
