"""Where a run's method settings come from, resolved in one place.

Each field of a method's settings dataclass takes the value the user gave (a recipe key, a trainer keyword, a field
of the run's config the user set: every route arrives as one mapping), else the method's own default: never another
method's, never the config's. A size that must fit the group (a field with ``metadata={FITS_GROUP: True}``, such as
``set_size``) left at a default that a group of N cannot hold is fitted to N - 1, and said so. Then one check: each
value held to its field's type, the dataclass's own ``check()``, and a given size against the group's. Errors name
the method."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import MISSING, dataclass, field, fields
from typing import Any

from ..recipe import check_field_types
from .base import Method

FITS_GROUP = "fits_group"  # field marker: a size 1 <= n < N of the group's N rollouts
AT_ONE = "at_one"  # field metadata: what the size 1 means for the method, said in the run's start-up line


def size_field(help: str, at_one: str, default: int = 4) -> Any:
    """A method's size that must fit the group (``set_size``: Poly-EPO's n, the pass@k methods' k), declared once:
    ``default`` (fitted to N - 1 for a group of N that cannot hold it, said in the log), what it means at 1
    (``at_one``); the resolver checks 1 <= value (< N, given a group)."""
    return field(default=default, metadata={"help": help, FITS_GROUP: True, AT_ONE: at_one})


@dataclass
class DiversitySettings:
    """The weight of a diversity bonus's reward column (GRPO+DIV's, the novelty bonus's)."""

    diversity_coef: float = field(
        default=0.5,
        metadata={"help": "lambda, the weight of the bonus column: reward + lambda x bonus. Paper: 0.5 (GRPO+DIV)."},
    )

    def check(self) -> None:
        if self.diversity_coef < 0:
            raise ValueError(f"diversity_coef must be non-negative, got {self.diversity_coef}.")


@dataclass(frozen=True)
class Resolved:
    """A method's settings (an instance of its dataclass; the run's settings for a method that declares none) and,
    per field, where its value came from: the route the user gave it by, ``"default"``, or ``"fitted: why"``."""

    settings: Any
    sources: dict[str, str] = field(default_factory=dict)


def default_of(spec: Any) -> Any:
    """A dataclass field's default."""
    return spec.default_factory() if spec.default_factory is not MISSING else spec.default


def fitted_size(default: int, num_generations: int) -> int:
    """The size of a set of a group of N that the user gave none: the default n, or N - 1 where the group cannot hold
    it (the most of the set objective such a group gives; at N = 2 that is n = 1, where f({i}) is r_i for a rollout
    with a strategy and 0 for a degenerate one, so the advantage is Dr.GRPO's on the mean reward)."""
    return min(default, num_generations - 1)


def default_value(spec: Any, num_generations: int | None) -> tuple[Any, str]:
    """A field's value when the user gave none, and its source (``"default"`` or ``"fitted: why"``)."""
    value = default_of(spec)
    if spec.metadata.get(FITS_GROUP) and num_generations is not None and value >= num_generations:
        return (
            fitted_size(value, num_generations),
            f"fitted: a group of num_generations={num_generations} cannot hold the default {value}",
        )
    return value, "default"


def check_fits_group(name: str, value: int, num_generations: int) -> None:
    """ValueError for a size the user gave that a group of N cannot hold, 1 <= n < N, naming both remedies."""
    if not 1 <= value < num_generations:
        raise ValueError(
            f"{name}={value} with num_generations={num_generations}: it must be at least 1 and smaller than "
            f"num_generations (with n = N every rollout is in the single set and all advantages are 0). Lower {name} "
            f"(a recipe's {name}:, the trainer's keyword {name}=..., or PolyEPOConfig in place of GRPOConfig, so "
            f"that your script takes --{name}), leave it out (a size the group holds is chosen), or raise "
            "num_generations."
        )


def resolve_settings(
    method: Method,
    given: Mapping[str, Any],
    num_generations: int | None = None,
    run: Any = None,
    routes: Mapping[str, str] | None = None,
) -> Resolved:
    """``method``'s settings: each field from ``given`` (what the user set, by any route; ``routes`` names each
    route, for the start-up line), else the method's default (``default_value``); checked once (see the module).
    A method without a settings dataclass is given ``run`` as it is. TypeError or ValueError naming the method."""
    if method.settings is None:
        return Resolved(run)
    routes = routes or {}
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for spec in fields(method.settings):
        if spec.name in given:
            values[spec.name], sources[spec.name] = given[spec.name], routes.get(spec.name, "given")
        else:
            values[spec.name], sources[spec.name] = default_value(spec, num_generations)
    try:
        settings = method.settings(**values)
        check_field_types(settings)
        if callable(getattr(settings, "check", None)):
            settings.check()
        for spec in fields(method.settings):
            if spec.metadata.get(FITS_GROUP) and values[spec.name] < 1:
                raise ValueError(f"{spec.name}={values[spec.name]}: a size is at least 1 (the papers' is 4).")
            if spec.metadata.get(FITS_GROUP) and spec.name in given and num_generations is not None:
                check_fits_group(spec.name, values[spec.name], num_generations)
    except (TypeError, ValueError) as error:
        raise type(error)(f"Method {method.name!r}: {error}") from None
    return Resolved(settings, sources)


def shown_settings(method: Method, run_settings: tuple[type, ...] = ()) -> tuple[str, ...]:
    """The settings a run's start-up line names beside the method and the judge: its sizes that fit the group; for a
    plain function, which reads the run's settings, those of ``run_settings`` (the classes every config carries)."""
    if method.settings is None and method.uses is None:
        specs = [spec for cls in run_settings for spec in fields(cls)]
    else:
        specs = list(method.setting_fields())
    return tuple(spec.name for spec in specs if spec.metadata.get(FITS_GROUP))


def meanings_at_one(method: Method, settings: Any) -> dict[str, str]:
    """What each of ``method``'s settings that ``settings`` sets to 1 means for the method (its field's ``AT_ONE``),
    by name: said in the start-up line and the dry run."""
    return {
        spec.name: spec.metadata[AT_ONE]
        for spec in method.setting_fields()
        if spec.metadata.get(AT_ONE) and getattr(settings, spec.name) == 1
    }
