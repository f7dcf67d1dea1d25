"""Plain text out of prompts and completions: chat messages flattened, the last \\boxed{...} answer, normalisation."""

from __future__ import annotations

import hashlib
import json
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
    """Drop whitespace, dollar signs and a trailing period. Case is kept (``\\Pi`` is not ``\\pi``, ``N`` is not
    ``n``) except in plain words of two or more letters (``Yes`` is ``yes``), which are lowercased."""
    text = re.sub(r"\s+|\$", "", answer).rstrip(".")
    return text.lower() if re.fullmatch(r"[A-Za-z]{2,}", text) else text


_TEXT_BLOCK = re.compile(r"\\(?:text|textbf|textit|mathrm|operatorname|mbox)\s*\{[^{}]*\}")
_IDENTIFIER = re.compile(r"\\[A-Za-z]+|[A-Za-z]")


def identifiers(latex: str) -> set[str]:
    """Variables and constants of a LaTeX answer: single letters and letter commands (``\\Pi``, ``\\pi``), with
    their case; command names that are not letters (``\\frac``, ``\\sqrt``) and ``\\text{...}`` content left out."""
    found = set(_IDENTIFIER.findall(_TEXT_BLOCK.sub(" ", latex)))
    return {token for token in found if len(token) == 1 or token[1:].lower() in _GREEK}


def differ_only_in_case(gold: str, prediction: str) -> bool:
    """True when two answers name the same variables up to case but not exactly (``\\Pi`` vs ``\\pi``, ``N`` vs
    ``n``, ``x+N`` vs ``x+n``): math-verify lowercases symbols, so it calls such answers equal."""
    a, b = identifiers(gold), identifiers(prediction)
    return a != b and {t.lower() for t in a} == {t.lower() for t in b}


_GREEK = {
    "alpha", "beta", "gamma", "delta", "epsilon", "varepsilon", "zeta", "eta", "theta", "vartheta", "iota", "kappa",
    "lambda", "mu", "nu", "xi", "omicron", "pi", "varpi", "rho", "varrho", "sigma", "varsigma", "tau", "upsilon",
    "phi", "varphi", "chi", "psi", "omega",
}  # fmt: skip


TOOL_RESULT_CHARS = 800  # default budget of a tool result in a judge's view of a trajectory
NO_RESULT = "[NO RESULT: none came back to the agent]"  # after a call no tool result answered
FINAL_ANSWER = "(final answer, no tool call)"  # first line of the agent's last turn when it calls nothing
NO_CALL = "(no tool call)"  # the plan view of an answer that calls nothing


def trajectory_text(completion: Any, tool_result_chars: int | None = TOOL_RESULT_CHARS, agent: bool = False) -> str:
    """A judge's view of an agent's trajectory: each turn on its own, between ``<<turn k ROLE TAG>>`` and
    ``<<end turn k TAG>>`` lines, where ``TAG`` (hashed from the whole trajectory, in none of its texts) is what no
    message can forge; tool calls as ``name(arguments)``, a call no result answered marked ``NO_RESULT``; the
    agent's last turn without a call marked as its final answer; tool results marked as the environment's and cut to
    their last ``tool_result_chars`` characters (None: whole). A string, or a single assistant message without tool
    calls, is returned as ``message_text`` returns it (a plain completion looks to the judge as it always did),
    unless ``agent``: in a group of trajectories a lone message is a turn too, the agent's final answer without a
    call."""
    if not is_trajectory(completion) and not (agent and isinstance(completion, list)):
        return message_text(completion)
    messages = [m for m in completion if isinstance(m, dict)]
    turns = _turns(messages, tool_result_chars)
    tag = _tag([text for _, text in turns])
    return "\n".join(
        f"<<turn {k} {role} {tag}>>\n{text}\n<<end turn {k} {tag}>>" for k, (role, text) in enumerate(turns, 1)
    )


def is_trajectory(completion: Any) -> bool:
    """True for a completion that is more than one plain assistant message: tool calls, tool results, or turns."""
    if not isinstance(completion, list):
        return False
    messages = [m for m in completion if isinstance(m, dict)]
    if len(messages) != 1:
        return True
    return messages[0].get("role", "assistant") != "assistant" or bool(messages[0].get("tool_calls"))


def final_text(completion: Any) -> str:
    """The agent's final answer: the last assistant message's words (a plain completion's whole text)."""
    if not is_trajectory(completion):
        return message_text(completion)
    said = [m for m in completion if isinstance(m, dict) and m.get("role", "assistant") == "assistant"]
    return _content_text(said[-1].get("content")).strip() if said else ""


def plan_text(completion: Any, agent: bool = False) -> str:
    """The agent's plan: its tool calls in order, one ``name(arguments)`` a line (a call no result answered marked
    ``NO_RESULT``), then its final answer (a plain completion's whole text; with ``agent``, a lone message is an
    answer without a call). Tool results are left out: they are the environment's, not the agent's choice."""
    if not is_trajectory(completion):
        text = message_text(completion)
        return f"{NO_CALL}\n{text}".strip() if agent and isinstance(completion, list) else text
    messages = [m for m in completion if isinstance(m, dict)]
    calls = [
        _call_text(c) + ("" if answered else f" {NO_RESULT}")
        for m, flags in zip(messages, answered_calls(messages), strict=True)
        for c, answered in zip(m.get("tool_calls") or [], flags, strict=True)
    ]
    return "\n".join([*calls, final_text(completion)]).strip()


def answered_calls(messages: list[dict]) -> list[list[bool]]:
    """Per message, per tool call: whether a tool result answered it. TRL's tool messages name their tool but carry
    no call id: each result answers the first open call of the last assistant turn with its name (else the first
    open one). A call left open got no result the agent saw: TRL takes back a result that would pass
    ``max_completion_length`` (the call has run: the environment may have changed), or the episode ended first."""
    answered = [[False] * len(m.get("tool_calls") or []) for m in messages]
    open_calls: list[tuple[int, int, str | None]] = []
    for i, message in enumerate(messages):
        role = message.get("role", "assistant")
        if role == "assistant":
            open_calls = [(i, j, _call_name(c)) for j, c in enumerate(message.get("tool_calls") or [])]
        elif role == "tool" and open_calls:
            same = [k for k, (_, _, name) in enumerate(open_calls) if name == message.get("name")]
            m, j, _ = open_calls.pop(same[0] if same else 0)
            answered[m][j] = True
    return answered


def judge_input(completion: Any) -> Any:
    """What crosses processes to the judge: a string as it is; messages with their role, name, text content,
    tool calls and any other plain fields, images and other binary blocks replaced by ``{"type": kind}``."""
    if not isinstance(completion, list):
        return completion
    return [_plain_message(m) if isinstance(m, dict) else str(m) for m in completion]


def _plain_message(message: dict) -> dict:
    content = message.get("content")
    if is_value(content):
        content = str(content)
    elif isinstance(content, list):
        content = [
            block if isinstance(block, dict) and block.get("type", "text") == "text" else {"type": _kind(block)}
            for block in content
        ]
    return {**message, "content": content}


def is_value(content: Any) -> bool:
    """Whether a message's list content is a tool's returned value (rows of a query, say) rather than content
    blocks (dicts, each with a type): such a value is read as its text, ``str(content)``, never as blocks."""
    return isinstance(content, list) and any(not isinstance(block, dict) for block in content)


def _kind(block: Any) -> str:
    return str(block.get("type", "block")) if isinstance(block, dict) else type(block).__name__


def trajectory_turns(text: str) -> list[tuple[str, str]]:
    """The (role, text) turns ``trajectory_text`` wrote, in order."""
    found = re.search(r"^<<turn 1 [a-z_]+ ([0-9a-f]{12})>>$", text, re.MULTILINE)
    if found is None:
        return []
    tag = re.escape(found.group(1))
    turn = re.compile(rf"^<<turn (\d+) ([a-z_]+) {tag}>>\n(.*?)\n<<end turn \1 {tag}>>$", re.DOTALL | re.MULTILINE)
    return [(role, body) for _, role, body in turn.findall(text)]


def _turns(messages: list[dict], tool_result_chars: int | None) -> list[tuple[str, str]]:
    """Each message as (role, text): an assistant's words then its tool calls (``NO_RESULT`` where no result
    answered one); its last turn without a call starts with ``FINAL_ANSWER``; a tool's result, cut and named."""
    answered = answered_calls(messages)
    last_said = max((i for i, m in enumerate(messages) if m.get("role", "assistant") == "assistant"), default=-1)
    turns = []
    for i, (message, flags) in enumerate(zip(messages, answered, strict=True)):
        role = str(message.get("role", "assistant"))
        text = _content_text(message.get("content"))
        if role == "tool":
            turns.append(("tool_result", _tool_result(message.get("name") or "tool", text, tool_result_chars)))
            continue
        calls = message.get("tool_calls") or []
        parts = [FINAL_ANSWER] if role == "assistant" and i == last_said and not calls else []
        parts += [text.strip()] if text.strip() else []
        parts += [
            f"calls {_call_text(call)}" + ("" if got else f" {NO_RESULT}")
            for call, got in zip(calls, flags, strict=True)
        ]
        kind = "assistant" if role == "assistant" else re.sub(r"[^a-z_]", "_", role.lower()) or "other"
        turns.append((kind, "\n".join(parts)))
    return turns


def _tool_result(name: str, text: str, chars: int | None) -> str:
    """A tool's result as the judge sees it: named, marked as the environment's, cut to its last ``chars``."""
    if chars is not None and len(text) > chars:
        text = f"[... {len(text) - chars} characters cut ...]\n{text[len(text) - chars :]}"
    return f"(result of {name}, from the environment)\n{text}"


def _content_text(content: Any) -> str:
    """Text of a message's content: a string, or content blocks (text kept, an image or other block named)."""
    if content is None:
        return ""
    if isinstance(content, list) and not is_value(content):
        pieces = []
        for block in content:
            if isinstance(block, dict) and block.get("type", "text") == "text":
                pieces.append(str(block.get("text", "")))
            else:
                pieces.append(f"[{_kind(block)}]")
        return " ".join(pieces)
    return str(content)


def _call_name(call: Any) -> str | None:
    function = call.get("function", call) if isinstance(call, dict) else None
    return function.get("name") if isinstance(function, dict) else None


def _call_text(call: Any) -> str:
    """``name(arguments)``; a malformed call is shown as what it is rather than dropped."""
    function = call.get("function", call) if isinstance(call, dict) else None
    if not isinstance(function, dict) or not function.get("name"):
        return f"<malformed tool call: {str(call)[:200]}>"
    arguments = function.get("arguments", {})
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return f"{function['name']}(<arguments that are not JSON: {arguments[:200]}>)"
    return f"{function['name']}({json.dumps(arguments, ensure_ascii=False, sort_keys=True)})"


def _tag(texts: list[str]) -> str:
    """12 hex characters hashed from ``texts`` that none of them contains."""
    seed = "\0".join(texts)
    for attempt in range(1000):
        tag = hashlib.sha256(f"{attempt}\0{seed}".encode()).hexdigest()[:12]
        if all(tag not in text for text in texts):
            return tag
    raise ValueError("no delimiter tag found")  # 1000 collisions of 48-bit hashes: not a real input
