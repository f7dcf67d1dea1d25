"""SetPO (Li et al. 2026, arXiv 2602.01062): each rollout's leave-one-out marginal contribution to a kernel diversity
of its group, added to Dr.GRPO's advantage,

    D(O) = 1/|O| sum_{i in O} -log(1 + 1/|O| sum_{j in O} k_ij),    s_i = D(O) - D(O minus {o_i}),
    A_i = (r_i - mean_j r_j) + lambda s_i,

with k_ij a similarity in [0, 1]. As the authors' port (``liv-daliberti/remax``, ``setpo.py``:
``setpo_marginal_contributions``, ``shape_setpo_advantages``) computes it.

- **The kernel** (``setpo_kernel``). ``embedding`` (the default): the cosine similarity of sentence embeddings,
  clamped to [0, 1], of the completions as judges read them; the model is ``setpo_embedding_model`` (default the
  all-MiniLM-L6-v2 the embedding judge uses, as the port does: the paper names no model). Or
  ``package.module:function``, a function ``(completions: list[str]) -> [N, N]`` similarity in [0, 1] of your own,
  clamped as the embedding's.
- **lambda = 1** (``setpo_coef``), the port's.
- **No centring**: the port adds lambda s_i as published, so the advantages of a group need not sum to 0 (logged as
  ``setpo/group_mean_shift``).
- **Scaling** is the method's own (``owns_scaling``): the base advantage is Dr.GRPO's, without the std.
- **No judge**: the kernel reads the completions. A group of one has no marginal (s = 0).

    trainer: setpo
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from ..judges.embedding import default_embedding_model
from ..registry import import_callable
from .base import SetBatch, advantage_method
from .papers import SETPO_PAPER


@dataclass
class SetPOSettings:
    """SetPO's weight and kernel."""

    setpo_coef: float = field(default=1.0, metadata={"help": "lambda, the weight of the marginal s_i. The port: 1."})
    setpo_kernel: str = field(
        default="embedding",
        metadata={
            "help": "k_ij: 'embedding' (cosine similarity of sentence embeddings, clamped to [0, 1]) or "
            "'package.module:function', a function (completions) -> [N, N] similarity."
        },
    )
    setpo_embedding_model: str | None = field(
        default=None,
        metadata={"help": "The sentence-transformers model of the 'embedding' kernel (default: all-MiniLM-L6-v2)."},
    )

    def check(self) -> None:
        if not self.setpo_coef >= 0:
            raise ValueError(f"setpo_coef must be a non-negative number, got {self.setpo_coef}.")
        if self.setpo_kernel != "embedding" and ":" not in self.setpo_kernel:
            raise ValueError(
                f"setpo_kernel={self.setpo_kernel!r}: use 'embedding' or 'package.module:function' (a function "
                "(completions) -> [N, N] similarity)."
            )
        kernel_function(self)  # one of one's own is imported here, before the run, not at its first step


def setpo_marginals(kernel: torch.Tensor) -> torch.Tensor:
    """s_i = D(O) - D(O minus {o_i}) of each rollout [G, N], from the groups' kernels [G, N, N] (clamped to [0, 1]);
    0 in a group of one."""
    k = kernel.to(torch.float64).clamp(0.0, 1.0)
    size = k.shape[-1]
    if size < 2:
        return torch.zeros(k.shape[:-1], dtype=torch.float64)
    rows = k.sum(2)
    full = -torch.log1p(rows / size).mean(1, keepdim=True)
    reduced = -torch.log1p((rows.unsqueeze(2) - k) / (size - 1))  # [g, i, r]: row i's mass with column r removed
    survivors = reduced * (1 - torch.eye(size, dtype=k.dtype)).unsqueeze(0)
    return full - survivors.sum(1) / (size - 1)


@functools.cache
def _encoder(model: str):
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(model, device="cpu")


def embedding_kernel(completions: list[str], model: str | None = None) -> torch.Tensor:
    """Cosine similarities [N, N] of the completions' sentence embeddings."""
    vectors = _encoder(model or default_embedding_model()).encode(
        completions, convert_to_tensor=True, normalize_embeddings=True
    )
    return (vectors @ vectors.T).cpu().to(torch.float64)


def kernel_function(settings: SetPOSettings) -> Callable[[list[str]], torch.Tensor]:
    """The run's k: completions -> [N, N]."""
    if settings.setpo_kernel == "embedding":
        return functools.partial(embedding_kernel, model=settings.setpo_embedding_model)
    return import_callable(settings.setpo_kernel, "setpo_kernel", "use 'embedding' or 'package.module:function'.")


@advantage_method(
    "setpo",
    needs_judge=False,
    settings=SetPOSettings,
    label="SetPO",
    describe=lambda s: (
        f"- SetPO: Dr.GRPO's advantage + {s.setpo_coef:g} x each rollout's marginal to the group's kernel diversity "
        f"(Li et al. 2026), kernel {s.setpo_kernel}."
    ),
    tags=("setpo",),
    paper=SETPO_PAPER,
    owns_scaling=True,
)
def setpo(batch: SetBatch, settings: SetPOSettings) -> tuple[torch.Tensor, dict[str, float]]:
    """[G, N] Dr.GRPO advantages plus lambda times the marginals of each group's kernel."""
    size, similarity = batch.group_size, kernel_function(settings)
    kernels = torch.stack(
        [torch.as_tensor(similarity(batch.completions[g * size : (g + 1) * size])) for g in range(len(batch.problems))]
    )
    marginals = settings.setpo_coef * setpo_marginals(kernels)
    rewards = batch.rewards.to(torch.float64)
    advantages = torch.nan_to_num(rewards - torch.nanmean(rewards, dim=1, keepdim=True), nan=0.0) + marginals
    return advantages, {
        "kernel_mean": float(kernels.clamp(0, 1).mean()),
        "marginal_mean": float(marginals.mean()),
        "group_mean_shift": float(marginals.mean(1).abs().max()),
    }
