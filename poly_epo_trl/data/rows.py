"""Prompts checked where they are read, for recipes and trainers alike.

A prompt column is in TRL's text format or its conversational format, the same in every row. A conversation is a
list of messages, each with a ``role`` chat templates know and a ``content`` (a string, or a multimodal list of typed
parts). ShareGPT's messages (``{"from": "human", "value": ...}``) are converted: TRL's ``maybe_convert_to_chatml``
renames the keys but keeps ShareGPT's role names (``human``, ``gpt``), which chat templates do not know, so the roles
are mapped too. Anything else stops with the row, the column and what to do; nothing is made into text that was not
text.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..recipe import RecipeError

ROLES = ("system", "user", "assistant", "tool", "developer")
SHAREGPT_ROLES = {"human": "user", "gpt": "assistant", "system": "system", "user": "user", "assistant": "assistant"}
SHAREGPT_ROLES |= {"tool": "tool", "observation": "tool", "function_response": "tool"}


def is_sharegpt(value: Any) -> bool:
    """A list of ShareGPT messages (``from`` and ``value`` keys, no ``role``)."""
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(m, dict) and "from" in m and "value" in m and "role" not in m for m in value)
    )


def from_sharegpt(messages: list[dict[str, Any]], where: str) -> list[dict[str, Any]]:
    """ShareGPT's messages as TRL's conversational format: ``from`` -> ``role`` (``human`` -> ``user``, ``gpt`` ->
    ``assistant``), ``value`` -> ``content``, other keys kept."""
    converted = []
    for i, message in enumerate(messages):
        role = SHAREGPT_ROLES.get(str(message["from"]))
        if role is None:
            raise RecipeError(
                f"{where}, message {i}: ShareGPT role {message['from']!r} has no chat role; the known ones are "
                f"{sorted(SHAREGPT_ROLES)}. Convert the rows to messages with roles {list(ROLES)}."
            )
        rest = {k: v for k, v in message.items() if k not in ("from", "value")}
        converted.append({"role": role, "content": message["value"], **rest})
    return converted


def check_conversation(messages: list[Any], where: str) -> None:
    """RecipeError naming the message of ``where`` that is not a chat message with a known role and a content."""
    for i, message in enumerate(messages):
        if not isinstance(message, dict):
            raise RecipeError(f"{where}, message {i}: {message!r} is not a message (a dict with 'role', 'content').")
        role = message.get("role")
        if role not in ROLES:
            raise RecipeError(
                f"{where}, message {i}: role {role!r} is not one chat templates know; use one of {list(ROLES)}."
            )
        content = message.get("content")
        parts = isinstance(content, list) and all(isinstance(p, dict) and "type" in p for p in content)
        if not isinstance(content, str) and not parts and not (role == "assistant" and message.get("tool_calls")):
            raise RecipeError(
                f"{where}, message {i} ({role}): {'no content' if content is None else repr(content)[:80]}; a "
                "message's content is a string (or a list of typed parts, for images)."
            )


def kind_of(value: Any) -> str:
    """'text', 'conversation', 'sharegpt', or the value's type name (neither)."""
    if isinstance(value, str):
        return "text"
    if is_sharegpt(value):
        return "sharegpt"
    if isinstance(value, list) and value and all(isinstance(m, dict) for m in value):
        return "conversation"
    return type(value).__name__


def checked_prompts(values: Sequence[Any], column: str) -> list[Any] | None:
    """The prompts of a column, checked: every row text, or every row a conversation; ShareGPT rows converted.
    Returns the converted values, or None when nothing needed converting. RecipeError naming the first row that is
    neither, or that differs from row 0."""
    first: str | None = None
    converted: list[Any] | None = None
    for row, value in enumerate(values):
        kind = kind_of(value)
        where = f"row {row}, column {column!r}"
        if kind not in ("text", "conversation", "sharegpt"):
            raise RecipeError(
                f"{where}: {repr(value)[:80]} ({kind}) is no prompt: a prompt is text, or a conversation (a list of "
                "messages with 'role' and 'content')."
            )
        if kind == "text" and not value.strip():
            raise RecipeError(f"{where}: the prompt is empty.")
        shape = "text" if kind == "text" else "conversation"
        if first is None:
            first = shape
        elif shape != first:
            raise RecipeError(
                f"{where} is {shape}, row 0 is {first}: every row of a prompt column is one format (TRL's text or "
                "its conversational format). Convert the rows to one of them."
            )
        if kind == "sharegpt":
            if converted is None:
                converted = list(values)
            value = converted[row] = from_sharegpt(value, where)
        if shape == "conversation":
            check_conversation(value, where)
    return converted
