"""The real-LM task: prompt ``A <category> starting with <L>:``; a completion is correct when it names a member of
the category whose name starts with that letter. ``pycountry`` (ISO 3166 and ISO 639, a maintained data package)
decides: the categories are countries (ISO 3166-1: name or common name), US states (ISO 3166-2:US) and languages
(ISO 639-1).

A completion's strategy is the member it names (the ``names_by_letter`` judge clusters by it; any other short name is
a wrong strategy of its own, anything longer degenerate), so a prompt has as many correct strategies as members with
that initial, at least 2 by construction (2 to 40). The prompts (category, letter) are split once, every third held
out (19 prompts, never trained on), the other 38 trained on.

There is no answer that works across prompts: the letter decides which names are right, so what a policy learns on
the training letters helps a held-out letter only through what the model knows. The task's model is
SmolLM2-135M-Instruct after a short supervised warm start on its own right answers to the training prompts
(``builtin:smollm2_names``, built once on first use by ``warm_start``): it answers the bare prompt with a name, about
half the time a right one on held-out prompts, and otherwise often a popular name with the wrong initial ("Germany"
for a country starting with H).
"""

from __future__ import annotations

from typing import Any

from datasets import Dataset

from ...judges import CallableJudge, ClusteringJudge, clusters_by
from ...judges.specs import JUDGES, JudgeSpec
from ...models import MODELS
from ...rewards.base import REWARDS
from ..base import TASKS, Task
from .names import (
    CATEGORIES,
    all_prompts,
    correct_members,
    is_correct,
    make_prompt,
    member,
    members,
    name_key,
    parse_prompt,
    prefix_prompts,
    split_prompts,
)


@REWARDS.register("names_by_letter")
def names_by_letter_reward(prompts: list[str], completions: list[str], **kwargs: Any) -> list[float]:
    """TRL reward function: 1.0 when the completion names a member of the category with the prompt's initial."""
    return [float(is_correct(p, c)) for p, c in zip(prompts, completions, strict=True)]


def name_judge(prompt: str, completions: list[str]) -> list[int]:
    """Clustering judge: the same member (by any of its names), the same cluster."""
    return clusters_by(name_key(prompt, completion) for completion in completions)


@JUDGES.register("names_by_letter")
def names_by_letter_judge(arg: str, spec: JudgeSpec) -> ClusteringJudge:
    """The judge spec ``names_by_letter``: ``name_judge``."""
    return CallableJudge(name_judge, **spec.common())


@MODELS.register("smollm2_names")
def warm_start_model() -> str:
    """SmolLM2-135M-Instruct after the task's format warm start, built once (a few minutes on 2 CPU cores) under
    ``$POLY_EPO_CACHE``."""
    from .warm_start import cached_warm_start

    return str(cached_warm_start())


def rows(split: str) -> Dataset:
    """The prompts of ``split`` (``split_prompts``): ``train``, or held out: ``test`` (other letters) or ``prefix``
    (two-letter prefixes of the training letters)."""
    return Dataset.from_dict({"problem": split_prompts(split)})


TASK = TASKS.register("names_by_letter")(
    Task(
        rows=rows,
        reward="names_by_letter",
        judge="names_by_letter",
        model="smollm2_names",
        settings={
            "prompt_column": "problem",
            "answer_column": None,
            "instruction": "",
            "chat_format": False,
            "max_completion_length": 8,
        },
    )
)


__all__ = [
    "CATEGORIES",
    "TASK",
    "all_prompts",
    "correct_members",
    "is_correct",
    "make_prompt",
    "member",
    "members",
    "name_judge",
    "name_key",
    "names_by_letter_reward",
    "parse_prompt",
    "prefix_prompts",
    "rows",
    "split_prompts",
]
