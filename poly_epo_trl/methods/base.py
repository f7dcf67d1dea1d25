"""What an advantage method is: a registered function of a step's judged groups, as verl registers its advantage
estimators (``@register_adv_est``). The trainer does everything around it, the same for every method: it judges the
groups (when the method needs a judge), applies the judge's fallbacks, scales, keeps the step's state, fills the
completions table and logs the metrics.

A method gives one of:

- an **advantage** ``(batch, settings) -> [G, N]`` that replaces GRPO's (``@advantage_method``);
- a **bonus** ``(batch, settings) -> [G, N]`` added to the reward as a column of its own, weighted by a setting,
  with GRPO's advantage computed on top (``@bonus_method``);
- nothing: GRPO's own advantage, untouched (``grpo``).

A method owns its settings (``settings=``, a dataclass whose fields have defaults and ``metadata={"help": ...}``):
``fn`` is given an instance of it, its fields are recipe keys and trainer keywords once the run trains with the
method, and another method's run refuses them, naming the method. A ``check(self)`` method on the dataclass refuses
bad values (ValueError). The run's settings every method may read come on the batch: ``batch.degenerate_cluster_id``
and ``batch.correct_reward_threshold``. A method declared without settings is given the run's settings, as they are.

A method with state across steps (``state=``, a class with ``state_dict`` and ``load_state_dict``) is also given its
state, ``fn(batch, settings, state)``; the trainer saves and restores it with every checkpoint.

    from dataclasses import dataclass, field
    from poly_epo_trl.methods import advantage_method

    @dataclass
    class ClusterScaled:
        power: float = field(default=1.0, metadata={"help": "The exponent of N / |cluster(y)|."})

    @advantage_method("cluster_scaled", settings=ClusterScaled)
    def cluster_scaled(batch, settings):
        "Dr.GRPO's advantage times (N / |cluster(y)|) ** power."
        scale = (batch.group_size / batch.cluster_sizes()) ** settings.power
        return (batch.rewards - batch.rewards.nanmean(1, keepdim=True)) * scale

A recipe names it ``trainer: cluster_scaled`` (when its module is imported), or ``trainer:
mypackage.mymodule:cluster_scaled`` with nothing registered, and sets ``power: 2.0``; in Python,
``PolyEPOTrainer(..., method=..., power=2.0)``. A method's metrics are logged as ``<method name>/<metric>``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import MISSING, dataclass, field, fields, is_dataclass
from typing import Any, Protocol

import torch

from ..constants import DEGENERATE_CLUSTER_ID
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
    judge's verdict per group (None where it did not judge); the run's degenerate cluster id, the reward from
    which a rollout counts as correct, and the run's reward floor (``floor.RewardFloor``: no scored reward is below
    it). For a method that reads them (``Method.reads_logprobs``): each completion's summed token log-probability
    under the policy that sampled it and its token count [G, N] (``sequence_logprobs``, ``completion_lengths``; the
    model's tokens only, an agent's tool results left out); None for other methods."""

    rewards: torch.Tensor
    cluster_ids: torch.Tensor
    advantages: torch.Tensor
    mode: str
    prompts: list[str]
    completions: list[str]
    inputs: list[Any]
    verdicts: list[JudgeResult | None]
    degenerate_cluster_id: int = DEGENERATE_CLUSTER_ID
    correct_reward_threshold: float = 1.0
    reward_floor: float = 0.0
    sequence_logprobs: torch.Tensor | None = None
    completion_lengths: torch.Tensor | None = None
    audits: dict[int, JudgeResult] | None = (
        None  # the audit judge's verdicts, by group: the audit trail's, no method's
    )

    def logprobs_for(self, method: str) -> tuple[torch.Tensor, torch.Tensor]:
        """``sequence_logprobs`` and ``completion_lengths``; ValueError naming ``method`` where the batch carries
        none (a method that reads them declares ``reads_logprobs=True``, and only then does the trainer fill them)."""
        if self.sequence_logprobs is None or self.completion_lengths is None:
            raise ValueError(
                f"Method {method!r} reads each completion's log-probability and length, and this batch carries none: "
                "declare the method with reads_logprobs=True (the trainer then fills SetBatch.sequence_logprobs and "
                "completion_lengths), or fill them yourself when you call it on a batch of your own."
            )
        return self.sequence_logprobs, self.completion_lengths

    def floored_rewards(self) -> torch.Tensor:
        """The rewards read from the run's floor, r - F >= 0 (NaN stays NaN): what a method that multiplies rewards
        reads, so that a negative reward never turns its factor into a penalty (``floor``)."""
        return self.rewards - self.reward_floor

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

    def cluster_sizes(self, among: torch.Tensor | None = None) -> torch.Tensor:
        """|cluster(y)| of each rollout in its group [G, N], counting only the rollouts where ``among`` [G, N] holds
        (all by default)."""
        same = self.cluster_ids.unsqueeze(2) == self.cluster_ids.unsqueeze(1)
        return (same if among is None else same & among.unsqueeze(1)).sum(2)

    def outcomes(self, correct_only: bool) -> torch.Tensor:
        """[G, N] bools: the scored rollouts whose answer the judge read (not degenerate), with ``correct_only`` only
        those at or above ``correct_reward_threshold``: the rollouts an answer-count method reweights."""
        kept = (self.cluster_ids != self.degenerate_cluster_id) & ~torch.isnan(self.rewards)
        return kept & (self.rewards >= self.correct_reward_threshold) if correct_only else kept


class MethodState(Protocol):
    """What a method keeps across steps: saved with each checkpoint and restored on resume."""

    def state_dict(self) -> dict[str, Any]: ...

    def load_state_dict(self, state: dict[str, Any]) -> None: ...


@dataclass(frozen=True)
class Method:
    """An advantage method (see the module's docstring). ``fn`` gives the advantages or the bonus [G, N] of a
    ``SetBatch``, or ``(values, metrics)`` with metrics logged as ``<name>/<metric>``; ``needs_judge``: whether the
    groups are judged first; ``settings``: the dataclass of its own settings (``fn`` is given an instance; None:
    not declared, ``fn`` is given the run's settings); ``label``: its name on model cards; ``column`` and
    ``weight`` (a number, or the name of the setting that holds it): a bonus's reward column; ``state``: a factory
    of its state across steps; ``describe``: its line on the model card, from its settings; ``tags`` and ``paper``
    (title, arXiv id, citation): the model card's, TRL's GRPO paper when None; ``reads_floor``: it multiplies
    rewards, so it reads them from the run's reward floor (``SetBatch.floored_rewards``; the start-up line says the
    floor and the log says when it moves); ``reads_logprobs``: it reads each completion's sampling log-probability
    and length (``SetBatch.logprobs_for``), which the trainer fills for such methods only; ``owns_scaling``: its
    advantages carry their own normalisation (a std, a mean, a focal weight), so the run's ``scale_rewards`` is not
    applied on top of them (the start-up line says so)."""

    name: str
    kind: str
    fn: Callable[..., Any] | None = None
    needs_judge: bool = True
    settings: type | None = None
    label: str = ""
    column: str | None = None
    weight: float | str = 1.0
    state: Callable[[], MethodState] | None = None
    describe: Callable[[Any], str] | None = None
    tags: tuple[str, ...] = field(default_factory=tuple)
    paper: Mapping[str, str] | None = None
    reads_floor: bool = False
    reads_logprobs: bool = False
    owns_scaling: bool = False

    def __post_init__(self) -> None:
        if self.owns_scaling and self.kind != "advantage":
            raise ValueError(f"Method {self.name!r}: owns_scaling is for advantage methods (a {self.kind} has none).")
        if self.kind not in KINDS:
            raise ValueError(f"Method {self.name!r}: kind={self.kind!r}, use one of {KINDS}.")
        if (self.fn is None) != (self.kind == "none"):
            raise ValueError(f"Method {self.name!r}: a function is needed for kind {self.kind!r}, and only then.")
        if self.settings is not None and not (isinstance(self.settings, type) and is_dataclass(self.settings)):
            raise TypeError(f"Method {self.name!r}: settings={self.settings!r} must be a dataclass (the class).")
        missing = [f.name for f in self.setting_fields() if f.default is MISSING and f.default_factory is MISSING]
        if missing:
            raise TypeError(f"Method {self.name!r}: settings {missing} need defaults (a recipe may leave them out).")

    @property
    def title(self) -> str:
        """The method's name on model cards and in the log: its label, else its registered name."""
        return self.label or self.name

    def setting_fields(self) -> tuple[Any, ...]:
        """The fields of the method's own settings (none where it declares none)."""
        return fields(self.settings) if self.settings is not None else ()

    @property
    def uses(self) -> tuple[str, ...] | None:
        """The names of the settings the method reads (None: not declared; a method of kind "none" reads none)."""
        if self.settings is None:
            return () if self.kind == "none" else None
        return tuple(f.name for f in self.setting_fields())

    def __call__(self, batch: SetBatch, settings: Any, state: MethodState | None = None) -> Any:
        """The method's values for ``batch`` (see ``fn``; ``settings``: ``settings.resolve_settings``'s)."""
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


def method(kind: str, name: str | None = None, **options: Any) -> Callable[[Callable[..., Any]], Method]:
    """The one decorator: ``fn`` as a ``Method`` of ``kind`` ("advantage" or "bonus") with ``options`` (``Method``'s
    fields: ``needs_judge``, ``settings``, ``label``, ``state``, ``describe``, ``tags``, ``paper``, ``reads_floor``,
    ``reads_logprobs``, ``owns_scaling``; a bonus's ``column``, by default its name, and ``weight``), registered as
    ``name`` when given (without a name it is reachable by its import path only)."""

    def decorate(fn: Callable[..., Any]) -> Method:
        method_name = name or fn.__name__
        extra = {"column": options.pop("column", None) or method_name} if kind == "bonus" else {}
        options["tags"] = tuple(options.get("tags", ()))
        found = Method(method_name, kind, fn, label=options.pop("label", None) or method_name, **extra, **options)
        return METHODS.register(method_name)(found) if name is not None else found

    return decorate


def advantage_method(name: str | None = None, **options: Any) -> Callable[[Callable[..., Any]], Method]:
    """``method("advantage", ...)``: ``fn(batch, settings) -> advantages [G, N]`` (or ``(advantages, metrics)``;
    with ``state``: ``fn(batch, settings, state)``) in place of GRPO's advantage."""
    return method("advantage", name, **options)


def bonus_method(name: str | None = None, **options: Any) -> Callable[[Callable[..., Any]], Method]:
    """``method("bonus", ...)``: ``fn(batch, settings) -> bonus [G, N]``, a reward column (``column``) of weight
    ``weight`` (a number, or the name of the setting that holds it), GRPO's advantage computed on the total."""
    return method("bonus", name, **options)


def setting_owners() -> dict[str, list[str]]:
    """Each registered method's setting, by name, with the methods that own it (``Method.settings``)."""
    owners: dict[str, list[str]] = {}
    for name in METHODS.names():
        for f in METHODS.get(name).setting_fields():
            owners.setdefault(f.name, []).append(name)
    return owners


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
