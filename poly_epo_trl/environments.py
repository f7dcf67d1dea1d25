"""Agents in recipes: environments (TRL's ``environment_factory``) and tools, by name, checked at the door.

A recipe names an environment class as a registered name or ``package.module:Class`` (or a mapping of names to
them: several environments, each row choosing one with its ``environment`` column), and tools as registered names or
``package.module:function``. TRL calls ``reset(**row)`` on each rollout's instance, offers its public methods as
tools, and takes ``get_reward()``, when the class has one, as a reward."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .checks import RecipeError
from .registry import Registry

ENVIRONMENTS: Registry[Callable[[], Any]] = Registry(
    "environment", own="your environment class", form="package.module:Class"
)
TOOLS: Registry[Callable[..., Any]] = Registry("tool", own="your tool function")
MULTI_ENVIRONMENT_COLUMN = "environment"  # TRL's: which environment a row plays, with several


@dataclass
class AgentArguments:
    """A recipe's rewards and agent: reward functions, TRL's ``environment_factory`` and ``tools`` by name, and the
    columns they read (shared by ``poly-epo train`` and ``poly-epo eval``)."""

    reward_funcs: list[str] | None = field(
        default=None,
        metadata={
            "help": "Rewards by name: 'math', 'code', 'sum_pair', or 'package.module:function'. Unset: ['math'], or "
            "none with environment_factory (its get_reward is the reward)."
        },
    )
    environment_factory: dict[str, str] | str | None = field(
        default=None,
        metadata={
            "help": "An agent's environment (TRL's environment_factory): a class, registered ('goldbach_agent') "
            "or 'package.module:Class'. Each rollout gets an instance; reset(**row) starts its episode, its public "
            "methods are the agent's tools, and a get_reward() method is a reward. A mapping {name: class} plays "
            "several, each row naming its own in an 'environment' column."
        },
    )
    tools: list[str] | None = field(
        default=None,
        metadata={
            "help": "Tool functions the agent may call (TRL's tools), registered or 'package.module:function', each "
            "with type hints and a Google-style docstring."
        },
    )
    keep_columns: list[str] | None = field(
        default=None,
        metadata={
            "help": "Dataset columns passed on as they are to the rewards and the environment's reset. The columns "
            "reset names as parameters (and 'environment') are kept without being listed."
        },
    )

    def settle_reward_funcs(self, reward_model: str | None = None) -> None:
        """Unset ``reward_funcs``: ``[math]``, or none when an environment or a reward model brings the reward;
        RecipeError when empty without either. Called from the recipe's ``__post_init__``."""
        if self.reward_funcs is None:
            self.reward_funcs = [] if self.environment_factory or reward_model else ["math"]
        if not self.reward_funcs and not self.environment_factory and not reward_model:
            raise RecipeError("reward_funcs is empty: name at least one reward, e.g. [math].")


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


def agent_parts(
    args: AgentArguments, chat_format: bool, table: Any, rewards: list[Any]
) -> tuple[dict[str, Any], list[str]]:
    """The trainer's ``environment_factory`` and ``tools`` from the recipe (empty for a recipe without agents), and
    the dataset columns to keep for rewards and environments: ``keep_columns`` and what the ``reset`` methods read.
    RecipeError for what TRL would stop on later: a name that does not import, an environment without ``reset``, a
    tool the model cannot be told about, no reward at all, a ``reset`` parameter that is not a column, a row naming
    an environment that is not there."""
    spec, tool_specs = args.environment_factory, args.tools or []
    listed = list(args.keep_columns or [])
    if spec is None and not tool_specs:
        return {}, listed
    if not chat_format:
        raise RecipeError("environment_factory and tools need conversational prompts: set chat_format: true.")
    parts: dict[str, Any] = {}
    if tool_specs:
        try:
            parts["tools"] = resolve_tools(tool_specs)
        except ValueError as error:
            raise RecipeError(f"tools: {error}") from None
    if spec is None:
        return parts, listed
    try:
        factories = resolve_environments(spec)
        named = factories if isinstance(factories, dict) else {str(spec): factories}
        infos = [describe_environment(name, factory) for name, factory in named.items()]
        columns = reset_columns(infos, table.column_names, given=("prompt", "answer", "tests"))
    except ValueError as error:
        raise RecipeError(f"environment_factory: {error}") from None
    if not rewards and not any(info.owns_reward for info in infos):
        raise RecipeError(
            f"reward_funcs is empty and environment_factory={spec!r} has no get_reward method: name a reward, or "
            "give the environment a get_reward()."
        )
    if isinstance(factories, dict):
        try:
            check_environment_column(list(factories), table)
        except ValueError as error:
            raise RecipeError(f"environment_factory: {error}") from None
        columns.append(MULTI_ENVIRONMENT_COLUMN)
    parts["environment_factory"] = factories
    return parts, list(dict.fromkeys([*listed, *columns]))


def agent_tools(parts: Mapping[str, Any]) -> list[Callable[..., Any]]:
    """What an agent of ``agent_parts`` can call, as TRL offers it: the ``tools``, then each environment's tool
    methods (of one probe instance per environment), each name once."""
    tools = list(parts.get("tools") or [])
    factories = parts.get("environment_factory")
    for factory in factories.values() if isinstance(factories, dict) else [factories] if factories else []:
        named = {getattr(t, "__name__", None) for t in tools}
        tools += [method for method in tool_methods(factory()) if method.__name__ not in named]
    return tools


def check_tool_template(tokenizer: Any) -> None:
    """RecipeError when the model's chat template cannot render a tool-calling conversation (TRL's test)."""
    from trl.chat_template_utils import supports_tool_calling

    if not supports_tool_calling(tokenizer):
        raise RecipeError(
            "environment_factory and tools: the model's chat template cannot render tool calls and tool results "
            "(TRL's supports_tool_calling). Use a model whose template does (Qwen3, Qwen2.5, Llama 3.1, ...), or save "
            "such a template with the model's tokenizer (chat_template.jinja)."
        )
