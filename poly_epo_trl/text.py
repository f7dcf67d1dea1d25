"""Plain text out of prompts and completions: chat messages flattened, the last \\boxed{...} answer, normalisation."""

from __future__ import annotations

import re
from typing import Any


def message_text(value: Any) -> str:
    """Plain text of a prompt or completion: a string, or the contents of a list of chat messages."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        parts = []
        for message in value:
            content = message.get("content", "") if isinstance(message, dict) else message
            if isinstance(content, list):  # multimodal content blocks
                content = " ".join(block.get("text", "") for block in content if isinstance(block, dict))
            parts.append(str(content))
        return "\n".join(parts)
    return str(value)


def prompt_text(prompt: Any) -> str:
    """The problem a judge sees: the last user message of a chat prompt, or the prompt string."""
    if isinstance(prompt, list):
        users = [m for m in prompt if isinstance(m, dict) and m.get("role") == "user"]
        return message_text(users[-1:] or prompt)
    return message_text(prompt)


def last_boxed(text: str) -> str | None:
    """Content of the last \\boxed{...} (or \\fbox{...}) in text, nested braces handled; None if there is none."""
    start = max(text.rfind("\\boxed{"), text.rfind("\\fbox{"))
    if start < 0:
        return None
    i = text.index("{", start) + 1
    depth, begin = 1, i
    while i < len(text):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return text[begin:i]
        i += 1
    return None


def normalize_answer(answer: str) -> str:
    """Drop whitespace, dollar signs and a trailing period; lowercase."""
    return re.sub(r"\s+|\$", "", answer).rstrip(".").lower()
