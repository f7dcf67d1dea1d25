"""Environments (TRL's ``environment_factory``) and tools by name, each checked as TRL will use it: a registered name
or ``package.module:Class`` (a mapping of names to them: several environments, each row choosing one with its
``environment`` column); tools as registered names or ``package.module:function``. TRL calls ``reset(**row)`` on
each rollout's instance, offers its public methods as tools, and takes ``get_reward()``, when the class has one, as a
reward."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..registry import Registry

ENVIRONMENTS: Registry[Callable[[], Any]] = Registry(
    "environment", own="your environment class", form="package.module:Class"
)
TOOLS: Registry[Callable[..., Any]] = Registry("tool", own="your tool function")
MULTI_ENVIRONMENT_COLUMN = "environment"  # TRL's: which environment a row plays, with several


@dataclass(frozen=True)
class EnvironmentInfo:
    """What TRL will see of an environment class: whether it owns the reward, what ``reset`` reads (each named
    parameter, and whether it has a default)."""

    name: str
    owns_reward: bool
    reset_parameters: Mapping[str, bool]


def resolve_environments(spec: str | Mapping[str, str]) -> Callable[[], Any] | dict[str, Callable[[], Any]]:
    """The factory ``spec`` names, or ``{name: factory}`` for a mapping; ValueError for a name that is neither
    registered nor importable."""
    if isinstance(spec, Mapping):
        if not spec:
            raise ValueError("the mapping of environments is empty: name at least one.")
        return {str(name): ENVIRONMENTS.get(str(each)) for name, each in spec.items()}
    return ENVIRONMENTS.get(spec)


def describe_environment(name: str, factory: Callable[[], Any]) -> EnvironmentInfo:
    """One instance of ``factory`` probed as TRL probes it (members listed on the class); ValueError when it cannot
    be built, has no ``reset``, or a tool method lacks what TRL needs to describe it to the model."""
    try:
        instance = factory()
    except Exception as error:
        raise ValueError(f"{name}() failed: {type(error).__name__}: {error}") from None
    members = dict(inspect.getmembers(type(instance), predicate=inspect.isfunction))
    if "reset" not in members:
        raise ValueError(f"{name} has no reset method: TRL starts each episode with reset(**row).")
    for method in tool_methods(instance):
        check_tool(f"{name}.{method.__name__}", method)
    parameters = {
        p.name: p.default is not inspect.Parameter.empty
        for p in inspect.signature(members["reset"]).parameters.values()
        if p.name != "self" and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    }
    return EnvironmentInfo(name, owns_reward(instance), parameters)


def owns_reward(environment: Any) -> bool:
    """Whether TRL takes the environment's ``get_reward()`` as a reward: a function of that name on its class."""
    return inspect.isfunction(getattr(type(environment), "get_reward", None))


def tool_methods(environment: Any) -> list[Callable[..., Any]]:
    """The methods of ``environment`` TRL offers the model as tools (listed on its class, ``is_tool_method``),
    bound to it."""
    members = inspect.getmembers(type(environment), predicate=inspect.isfunction)
    return [getattr(environment, name) for name, _ in members if is_tool_method(name)]


def is_tool_method(name: str) -> bool:
    """Whether TRL offers an environment's method ``name`` (listed on its class) to the model as a tool."""
    return name not in ("reset", "get_reward") and not name.startswith("_")


def check_environment_column(names: list[str], table: Any) -> None:
    """ValueError unless every row of ``table`` (a ``datasets.Dataset``) names one of several environments
    (``names``) in its ``environment`` column."""
    if MULTI_ENVIRONMENT_COLUMN not in table.column_names:
        raise ValueError(
            f"it names several environments ({sorted(names)}): each row needs an '{MULTI_ENVIRONMENT_COLUMN}' "
            f"column naming one; the columns are {table.column_names}."
        )
    unknown = sorted({str(v) for v in table[MULTI_ENVIRONMENT_COLUMN] if v not in names})
    if unknown:
        raise ValueError(
            f"rows name environments {unknown} in their '{MULTI_ENVIRONMENT_COLUMN}' column, which "
            f"environment_factory does not: it names {sorted(names)}."
        )


def resolve_tools(specs: list[str]) -> list[Callable[..., Any]]:
    """The tool functions ``specs`` name, each checked (``check_tool``)."""
    tools = [TOOLS.get(spec) for spec in specs]
    for spec, tool in zip(specs, tools, strict=True):
        check_tool(spec, tool)
    return tools


def check_tool(name: str, tool: Callable[..., Any]) -> None:
    """ValueError when the chat template could not describe ``tool`` to the model: transformers builds its JSON
    schema from type hints and a Google-style docstring with an ``Args:`` line per parameter."""
    from transformers.utils import get_json_schema

    try:
        get_json_schema(tool)
    except Exception as error:
        raise ValueError(
            f"tool {name} cannot be described to the model: {error} (give it type hints and a Google-style "
            "docstring with an Args: line per parameter)"
        ) from None


def reset_columns(infos: list[EnvironmentInfo], columns: list[str], given: tuple[str, ...] = ()) -> list[str]:
    """The dataset ``columns`` the environments' ``reset`` methods name; ValueError naming a parameter ``reset``
    needs (no default) that is neither a column nor one of the ``given`` fields every row gets anyway."""
    wanted = []
    for info in infos:
        for parameter, has_default in info.reset_parameters.items():
            if parameter in columns:
                wanted.append(parameter)
            elif not has_default and parameter not in given:
                raise ValueError(
                    f"environment {info.name}: reset needs {parameter!r}, which is not a dataset column (the "
                    f"columns are {columns})"
                )
    return list(dict.fromkeys(wanted))
