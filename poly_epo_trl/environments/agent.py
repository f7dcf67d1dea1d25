"""A recipe's agent: its rewards, environments and tools by name (``AgentArguments``), assembled into what the trainer
takes and checked at the door (``agent_parts``), and what the agent can call (``agent_tools``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..recipe import RecipeError, json_mapping
from .base import (
    MULTI_ENVIRONMENT_COLUMN,
    check_environment_column,
    describe_environment,
    reset_columns,
    resolve_environments,
    resolve_tools,
    tool_methods,
)


@dataclass
class AgentArguments:
    """A recipe's rewards and agent: reward functions, TRL's ``environment_factory`` and ``tools`` by name, and the
    columns they read (shared by ``poly-epo train`` and ``poly-epo eval``)."""

    reward_funcs: list[str] | None = field(
        default=None,
        metadata={
            "help": "Rewards by name: 'math', 'code', a task's ('sum_pair', ...), TRL's ('accuracy_reward', "
            "'reasoning_accuracy_reward', 'think_format_reward', 'get_soft_overlong_punishment'), or "
            "'package.module:function'. Unset: ['math'], or "
            "none with environment_factory (its get_reward is the reward)."
        },
    )
    reward_kwargs: dict[str, Any] | str | None = field(
        default=None,
        metadata={
            "help": "Arguments for rewards, keyed by the name reward_funcs gives each: {name: {argument: value}} (a "
            "JSON string on the command line). A reward function gets them bound; a factory, a function without "
            "`completions` (open-r1's get_cosine_scaled_reward), is called with them for the reward it returns."
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
        self.reward_kwargs = json_mapping("reward_kwargs", self.reward_kwargs, "reward names to their arguments")
        if self.reward_funcs is None:
            self.reward_funcs = [] if self.environment_factory or reward_model else ["math"]
        if not self.reward_funcs and not self.environment_factory and not reward_model:
            raise RecipeError("reward_funcs is empty: name at least one reward, e.g. [math].")


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
