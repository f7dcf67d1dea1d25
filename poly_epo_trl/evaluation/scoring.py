"""Scoring sampled completions: the task's rewards, each completion's final answer (for majority vote), clusters."""

from __future__ import annotations

import asyncio
import inspect
import math
from collections.abc import Callable, Sequence
from typing import Any

from ..environments import owns_reward
from ..judges import ClusteringJudge, JudgePipeline
from ..judges.answer import ANSWER_MODES, final_answer
from ..judges.specs import pipeline_of
from ..text import final_text, judge_input, normalize_answer, plan_text, prompt_text
from .sampling import as_completions

VOTE_MODES = (*ANSWER_MODES, "plan")


class Scorer:
    """Calls TRL reward functions as GRPOTrainer does (prompts, completions and the dataset's other columns, one
    row per completion; for agents' episodes, ``environments`` too, and each environment's ``get_reward()`` with
    weight 1) and sums them with ``reward_weights``; a ``None`` reward counts as missing (NaN is skipped in the sum,
    all-missing is NaN). Completions are texts, or messages (agents' episodes). The judge is a ClusteringJudge, a
    plain ``judge(prompt, completions)``, a spec string, or a ``JudgePipeline`` (``specs.pipeline_of``).
    ``vote_answer`` is what majority vote counts (``vote_answer``'s modes); the judge clusters the first
    ``judge_samples`` completions of each problem (all when None: an LM judge reads a whole group in one prompt, so
    large n needs a cap)."""

    def __init__(
        self,
        reward_funcs: Sequence[Callable[..., list[float | None]]],
        reward_weights: Sequence[float] | None = None,
        judge: JudgePipeline | ClusteringJudge | Callable[[str, list[str]], list[int]] | str | None = None,
        vote_answer: str = "auto",
        judge_samples: int | None = None,
    ) -> None:
        if judge_samples is not None and judge_samples < 1:
            raise ValueError(f"judge_samples={judge_samples}: cluster at least 1 sample per problem, or None for all.")
        if reward_weights is not None and len(reward_weights) != len(reward_funcs):
            raise ValueError(f"reward_weights has {len(reward_weights)} entries for {len(reward_funcs)} rewards.")
        self.reward_funcs = list(reward_funcs)
        self.reward_weights = list(reward_weights) if reward_weights is not None else [1.0] * len(reward_funcs)
        self.judge = pipeline_of(judge) if judge is not None else None
        self.vote_answer = vote_answer
        self.judge_samples = judge_samples

    def rewards(
        self,
        rows: Sequence[dict[str, Any]],
        completions: Sequence[Sequence[Any]],
        environments: Sequence[Sequence[Any]] | None = None,
    ) -> list[list[float]]:
        sizes = [len(t) for t in completions]
        columns: dict[str, list[Any]] = {"prompts": [], "completions": []}
        for row, group in zip(rows, completions, strict=True):
            columns["prompts"] += [row["prompt"]] * len(group)
            columns["completions"] += as_completions(row["prompt"], group)
            for key, value in row.items():
                if key != "prompt":
                    columns.setdefault(key, []).extend([value] * len(group))
        sources = [(func, weight) for func, weight in zip(self.reward_funcs, self.reward_weights, strict=True)]
        if environments is not None:
            columns["environments"] = [e for group in environments for e in group]
            sources.append((environment_rewards, 1.0))
        if not self.reward_funcs and not any(owns_reward(e) for e in columns.get("environments", [])):
            raise ValueError("Nothing to score with: no reward function, and no environment with a get_reward().")
        total = [0.0] * len(columns["prompts"])
        seen = [False] * len(total)
        for func, weight in sources:
            values = func(**columns, trainer_state=None)
            if len(values) != len(total):
                name = getattr(func, "__name__", repr(func))
                raise ValueError(f"Reward {name} returned {len(values)} values for {len(total)} completions.")
            for i, value in enumerate(values):
                if value is not None and not math.isnan(value):
                    total[i] += weight * float(value)
                    seen[i] = True
        flat = [t if s else math.nan for t, s in zip(total, seen, strict=True)]
        starts = [sum(sizes[:i]) for i in range(len(sizes))]
        return [flat[s : s + n] for s, n in zip(starts, sizes, strict=True)]

    def score(
        self,
        rows: Sequence[dict[str, Any]],
        completions: Sequence[Sequence[Any]],
        environments: Sequence[Sequence[Any]] | None = None,
    ) -> list[dict[str, Any]]:
        """One record per problem: ``rewards``, ``answers`` (from the final text of each completion) and ``clusters``
        (None without a judge or when the judge's fallback gave none). ``environments``: each episode's, for
        agents."""
        pending = None
        if self.judge is not None:  # the judge works in the background while the rewards are computed
            groups = [
                (prompt_text(row["prompt"]), [judge_input(c) for c in group[: self.judge_samples]])
                for row, group in zip(rows, completions, strict=True)
            ]
            pending = self.judge.submit_groups(groups)
        rewards = self.rewards(rows, completions, environments)
        clusters: list[list[int] | None] = [None] * len(rows)
        if pending is not None:
            clusters = [result.labels for result in pending.result()]
        return [
            {"rewards": r, "answers": [vote_answer(c, self.vote_answer) for c in group], "clusters": c}
            for r, group, c in zip(rewards, completions, clusters, strict=True)
        ]


def vote_answer(completion: Any, mode: str = "auto") -> str | None:
    """What majority vote counts for a completion: its final text's answer under an answer ``mode``, or with
    ``plan`` an agent's plan (its tool calls in order, then its final text: ``text.plan_text``)."""
    if mode == "plan":
        return normalize_answer(plan_text(completion)) or None
    return final_answer(final_text(completion), mode)


def environment_rewards(environments: list[Any], **kwargs: Any) -> list[float | None]:
    """Each episode's ``get_reward()`` (awaited when it is a coroutine); None for an environment without one."""
    values = []
    for environment in environments:
        value = environment.get_reward() if owns_reward(environment) else None
        values.append(asyncio.run(value) if inspect.isawaitable(value) else value)
    return values
