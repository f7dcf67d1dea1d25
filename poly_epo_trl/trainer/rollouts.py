"""A ``rollout_func``'s episodes as the judge reads them: its ``trajectory`` field when it gives one; else the turns
rebuilt from what ``GRPOTrainer`` itself takes, the completion's token ids and its ``env_mask`` (1 on the model's
tokens, 0 on the environment's). The model's spans become assistant turns, their tool calls read by the chat
template's response parsing (TRL's ``parse_response``); the environment's spans become the tool results, each named
after the call it answers, with the chat template's own wrapping around a tool result taken off."""

from __future__ import annotations

import copy
import functools
from collections.abc import Sequence
from typing import Any

from trl.chat_template_utils import (
    add_response_schema,
    get_training_chat_template,
    is_chat_template_prefix_preserving,
    parse_response,
)

SENTINEL = "\u2063TOOL-RESULT\u2063"  # stands for a tool result while the template's wrapping around one is read


def spans(ids: Sequence[int], mask: Sequence[int]) -> list[tuple[int, list[int]]]:
    """The runs of equal mask values, in order: (1 for the model's, 0 for the environment's, the run's ids)."""
    runs: list[tuple[int, list[int]]] = []
    for token, bit in zip(ids, mask, strict=True):
        if runs and runs[-1][0] == int(bit):
            runs[-1][1].append(token)
        else:
            runs.append((int(bit), [token]))
    return runs


@functools.lru_cache(maxsize=8)
def _parsing_tokenizer(tokenizer: Any) -> Any:
    """``tokenizer`` able to parse a response into a message with tool calls (TRL's ``add_response_schema`` on a
    copy, when it has no response template or schema of its own)."""
    if getattr(tokenizer, "response_template", None) is not None or getattr(tokenizer, "response_schema", None):
        return tokenizer
    try:
        return add_response_schema(copy.deepcopy(tokenizer))
    except (ValueError, TypeError):  # a template TRL has no schema for: responses read as plain text
        return tokenizer


def multi_turn_template(tokenizer: Any) -> str | None:
    """The chat template multi-turn episodes render with, as GRPOTrainer picks it: the tokenizer's own when it is
    prefix-preserving (None), else TRL's training template."""
    try:
        return None if is_chat_template_prefix_preserving(tokenizer) else get_training_chat_template(tokenizer)
    except (ValueError, TypeError):
        return None


@functools.lru_cache(maxsize=8)
def _tool_wrapping(tokenizer: Any) -> tuple[str, str]:
    """The text the chat template puts before and after a tool result (special tokens left out), read off a dummy
    conversation; ("", "") when the template cannot render one."""
    call = {"type": "function", "function": {"name": "tool", "arguments": {}}}
    head = [{"role": "user", "content": "x"}, {"role": "assistant", "content": "", "tool_calls": [call]}]
    whole = [*head, {"role": "tool", "name": "tool", "content": SENTINEL}]
    template = multi_turn_template(tokenizer)
    try:
        before = tokenizer.apply_chat_template(head, tokenize=False, chat_template=template)
        rendered = tokenizer.apply_chat_template(
            whole, tokenize=False, add_generation_prompt=True, chat_template=template
        )
    except Exception:
        return "", ""
    if not rendered.startswith(before) or SENTINEL not in rendered:
        return "", ""
    wrapper = tokenizer(rendered[len(before) :], add_special_tokens=False)["input_ids"]
    text = tokenizer.decode(wrapper, skip_special_tokens=True)
    prefix, _, suffix = text.partition(SENTINEL)
    return prefix.strip(), suffix.strip()


def tool_result(tokenizer: Any, ids: list[int]) -> str:
    """An environment span's text without the template's wrapping around a tool result."""
    text = tokenizer.decode(ids, skip_special_tokens=True).strip()
    prefix, suffix = _tool_wrapping(tokenizer)
    if prefix and text.startswith(prefix):
        text = text[len(prefix) :]
    if suffix and text.endswith(suffix):
        text = text[: -len(suffix)]
    return text.strip()


def turns_from_env_mask(
    tokenizer: Any, prompt_ids: Sequence[int], completion_ids: Sequence[int], env_mask: Sequence[int]
) -> list[dict]:
    """One episode's chat messages from its prompt and completion ids and ``env_mask``: an assistant message per span
    of the model's tokens (with its ``tool_calls`` when the response parses into some, read after everything before
    it), a tool message per span of the environment's, named after the call it answers (calls and results paired in
    order)."""
    parser = _parsing_tokenizer(tokenizer)
    messages: list[dict] = []
    pending: list[str] = []  # the names of the calls not yet answered
    before = list(prompt_ids)
    for bit, ids in spans(completion_ids, env_mask):
        if bit:
            message = parse_response(parser, ids, prefix=before)
            message["role"] = "assistant"
            pending += [call["function"]["name"] for call in message.get("tool_calls") or []]
            messages.append(message)
        else:
            result = {"role": "tool", "content": tool_result(tokenizer, ids)}
            if pending:
                result["name"] = pending.pop(0)
            messages.append(result)
        before += ids
    return messages
