"""What an advantage method is: a registered function of a step's judged groups, as verl registers its advantage
estimators (``@register_adv_est``). The trainer does everything around it, the same for every method: it judges the
groups (when the method needs a judge), applies the judge's fallbacks, scales, keeps the step's state, fills the
completions table and logs the metrics.

A method gives one of:

- an **advantage** ``(batch, settings) -> [G, N]`` that replaces GRPO's (``@advantage_method``);
- a **bonus** ``(batch, settings) -> [G, N]`` added to the reward as a column of its own, weighted by a setting,
  with GRPO's advantage computed on top (``@bonus_method``);
- nothing: GRPO's own advantage, untouched (``grpo``).

A method with state across steps (``state=``, a class with ``state_dict`` and ``load_state_dict``) is also given its
state, ``fn(batch, settings, state)``; the trainer saves and restores it with every checkpoint.

    from poly_epo_trl.methods import advantage_method

    @advantage_method("cluster_scaled")
    def cluster_scaled(batch, settings):
        "Dr.GRPO's advantage times N / |cluster(y)|."
        return (batch.rewards - batch.rewards.nanmean(1, keepdim=True)) * batch.group_size / batch.cluster_sizes()

A recipe names it ``trainer: cluster_scaled`` (when its module is imported), or ``trainer:
mypackage.mymodule:cluster_scaled`` with nothing registered; in Python, ``PolyEPOTrainer(..., method=...)``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import torch

from ..judges import JudgeResult
from ..registry import Registry

KINDS = ("advantage", "bonus", "none")


@dataclass
class SetBatch:
    """One generation batch's groups as a method sees them (all processes, on the host): total reward [G, N] (NaN
    where no reward function scored the rollout), the judge's cluster ids [G, N] (each rollout its own cluster for a
    method without a judge), the advantages [G, N] the step trained on (NaN until the method gave them), the mode
    ("train" or "eval"), and per row the problem, the completion as judges read it by default
    (``text.trajectory_text``) and as they take it (``text.judge_input``: strings, or an agent's messages); the
    judge's verdict per group (None where it did not judge)."""

    rewards: torch.Tensor
    cluster_ids: torch.Tensor
    advantages: torch.Tensor
    mode: str
    prompts: list[str]
    completions: list[str]
    inputs: list[Any]
    verdicts: list[JudgeResult | None]

    @property
    def group_size(self) -> int:
        return self.rewards.shape[1]

    @property
    def problems(self) -> list[str]:
        """Each group's problem."""
        return self.prompts[:: self.group_size]

    @property
    def fallbacks(self) -> list[str | None]:
        """Each group's fallback (None where a judge answered, or none judged)."""
        return [v.fallback if v is not None else None for v in self.verdicts]

    def cluster_sizes(self) -> torch.Tensor:
        """|cluster(y)| of each rollout in its group [G, N]."""
        return (self.cluster_ids.unsqueeze(2) == self.cluster_ids.unsqueeze(1)).sum(2)


class MethodState(Protocol):
    """What a method keeps across steps: saved with each checkpoint and restored on resume."""

    def state_dict(self) -> dict[str, Any]: ...

    def load_state_dict(self, state: dict[str, Any]) -> None: ...


@dataclass(frozen=True)
class Method:
    """An advantage method (see the module's docstring). ``fn`` gives the advantages or the bonus [G, N] of a
    ``SetBatch``, or ``(values, metrics)`` with metrics logged as ``poly_epo/<name>``; ``needs_judge``: whether the
    groups are judged first; ``uses``: the settings ``fn`` reads (the trainer says once when one that was set is
    unused; None: not declared); ``label``: its name on model cards; ``column`` and ``weight`` (a number, or the
    name of the setting that holds it): a bonus's reward column; ``state``: a factory of its state across steps;
    ``describe``: its line on the model card, from the settings; ``tags`` and ``paper`` (title, arXiv id,
    citation): the model card's, TRL's GRPO paper when None."""

    name: str
    kind: str
    fn: Callable[..., Any] | None = None
    needs_judge: bool = True
    uses: tuple[str, ...] | None = None
    label: str = ""
    column: str | None = None
    weight: float | str = 1.0
    state: Callable[[], MethodState] | None = None
    describe: Callable[[Any], str] | None = None
    tags: tuple[str, ...] = field(default_factory=tuple)
    paper: Mapping[str, str] | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"Method {self.name!r}: kind={self.kind!r}, use one of {KINDS}.")
        if (self.fn is None) != (self.kind == "none"):
            raise ValueError(f"Method {self.name!r}: a function is needed for kind {self.kind!r}, and only then.")

    def __call__(self, batch: SetBatch, settings: Any, state: MethodState | None = None) -> Any:
        """The method's values for ``batch`` (see ``fn``)."""
        if self.fn is None:
            raise TypeError(f"Method {self.name!r} leaves GRPO's advantage as it is: there is nothing to call.")
        return self.fn(batch, settings) if self.state is None else self.fn(batch, settings, state)

    def bonus_weight(self, settings: Any) -> float:
        """The weight of a bonus's reward column under ``settings``."""
        return float(getattr(settings, self.weight) if isinstance(self.weight, str) else self.weight)

    def card_line(self, settings: Any) -> str | None:
        return self.describe(settings) if self.describe is not None else None


METHODS: Registry[Method] = Registry(
    "trainer", "your own method (a function (batch, settings) -> advantages, or one decorated with advantage_method)"
)
"""Advantage methods by name: recipes' ``trainer:``, ``PolyEPOTrainer(method=...)``."""


def _method_decorator(kind: str, name: str | None, **options: Any) -> Callable[[Callable[..., Any]], Method]:
    def decorate(fn: Callable[..., Any]) -> Method:
        method_name = name or fn.__name__
        method = Method(method_name, kind, fn, label=options.pop("label", None) or method_name, **options)
        return METHODS.register(method_name)(method) if name is not None else method

    return decorate


def advantage_method(
    name: str | None = None,
    *,
    needs_judge: bool = True,
    uses: Sequence[str] | None = None,
    label: str | None = None,
    state: Callable[[], MethodState] | None = None,
    describe: Callable[[Any], str] | None = None,
    tags: Sequence[str] = (),
    paper: Mapping[str, str] | None = None,
) -> Callable[[Callable[..., Any]], Method]:
    """Decorator: ``fn(batch, settings) -> advantages [G, N]`` (or ``(advantages, metrics)``; with ``state``:
    ``fn(batch, settings, state)``) as a method that replaces GRPO's advantage, registered as ``name`` when given
    (without a name it is reachable by its import path only)."""
    return _method_decorator(
        "advantage",
        name,
        needs_judge=needs_judge,
        uses=tuple(uses) if uses is not None else None,
        label=label,
        state=state,
        describe=describe,
        tags=tuple(tags),
        paper=paper,
    )


def bonus_method(
    name: str | None = None,
    *,
    column: str | None = None,
    weight: float | str = 1.0,
    needs_judge: bool = True,
    uses: Sequence[str] | None = None,
    label: str | None = None,
    state: Callable[[], MethodState] | None = None,
    describe: Callable[[Any], str] | None = None,
    tags: Sequence[str] = (),
    paper: Mapping[str, str] | None = None,
) -> Callable[[Callable[..., Any]], Method]:
    """Decorator: ``fn(batch, settings) -> bonus [G, N]`` as a method that adds a reward column (``column``, by
    default the method's name) of weight ``weight`` (a number, or the name of the setting that holds it), GRPO's
    advantage computed on the total."""

    def decorate(fn: Callable[..., Any]) -> Method:
        return _method_decorator(
            "bonus",
            name,
            column=column or name or fn.__name__,
            weight=weight,
            needs_judge=needs_judge,
            uses=tuple(uses) if uses is not None else None,
            label=label,
            state=state,
            describe=describe,
            tags=tuple(tags),
            paper=paper,
        )(fn)

    return decorate


def get_method(spec: str | Method | Callable[..., Any]) -> Method:
    """The method ``spec`` names: a registered name, ``package.module:name`` (a ``Method``, or a plain function
    ``(batch, settings) -> advantages``, taken as an advantage method that needs a judge), or the object itself.
    ValueError naming what can be named otherwise."""
    if isinstance(spec, Method):
        return spec
    found = METHODS.get(spec) if isinstance(spec, str) else spec
    if isinstance(found, Method):
        return found
    if not callable(found):
        raise ValueError(f"trainer {spec!r} is neither a method nor a function: {METHODS.hint()}")
    return advantage_method()(found)
