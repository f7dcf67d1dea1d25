"""Agents in recipes: environments (TRL's ``environment_factory``) and tools by name, checked at the door (``base``),
and a recipe's agent assembled into what the trainer takes (``agent``)."""

from .agent import AgentArguments, agent_parts, agent_tools, check_tool_template
from .base import (
    ENVIRONMENTS,
    MULTI_ENVIRONMENT_COLUMN,
    TOOLS,
    EnvironmentInfo,
    check_environment_column,
    check_tool,
    describe_environment,
    is_tool_method,
    owns_reward,
    reset_columns,
    resolve_environments,
    resolve_tools,
    tool_methods,
)

__all__ = [
    "ENVIRONMENTS",
    "MULTI_ENVIRONMENT_COLUMN",
    "TOOLS",
    "AgentArguments",
    "EnvironmentInfo",
    "agent_parts",
    "agent_tools",
    "check_environment_column",
    "check_tool",
    "check_tool_template",
    "describe_environment",
    "is_tool_method",
    "owns_reward",
    "reset_columns",
    "resolve_environments",
    "resolve_tools",
    "tool_methods",
]
