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
