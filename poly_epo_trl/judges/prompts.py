"""Judge prompts (templates) and reading the judge's JSON answer back into cluster ids."""

from __future__ import annotations

import hashlib
import json
import re
import string
from pathlib import Path

from ..advantages.objectives import DEGENERATE_CLUSTER_ID
from .errors import InvalidAnswer

TEMPLATE_DIR = Path(__file__).with_name("templates")
BUILTIN_TEMPLATES = ("math", "code")
_FENCED_JSON = re.compile(r"```(?:json)?\s*(\{.*?\})\s*```", re.DOTALL)


class JudgeTemplate:
    """A prompt with the placeholders ``$problem``, ``$responses`` and ``$num_responses``."""

    def __init__(self, text: str, name: str = "custom") -> None:
        placeholders = {m.group("named") or m.group("braced") for m in string.Template.pattern.finditer(text)} - {None}
        missing = {"problem", "responses"} - placeholders
        if missing:
            raise ValueError(
                f"Judge template {name!r} lacks the placeholders {sorted(missing)}: add $problem and "
                "$responses (and optionally $num_responses)."
            )
        self.text = text
        self.name = name
        self.digest = hashlib.sha256(text.encode()).hexdigest()[:16]

    @classmethod
    def load(cls, spec: str) -> JudgeTemplate:
        """A built-in template's name (``"math"``, ``"code"``) or the path of a text file."""
        if spec in BUILTIN_TEMPLATES:
            return cls((TEMPLATE_DIR / f"{spec}.txt").read_text(), spec)
        path = Path(spec)
        if not path.is_file():
            raise ValueError(f"Judge template {spec!r} is neither one of {BUILTIN_TEMPLATES} nor a file.")
        return cls(path.read_text(), str(path))

    def render(self, problem: str, completions: list[str]) -> str:
        responses = "\n\n".join(f"### Answer {i}\n{c.strip()}" for i, c in enumerate(completions, 1))
        return string.Template(self.text).safe_substitute(
            problem=problem.strip(), responses=responses, num_responses=len(completions)
        )


def extract_json(text: str) -> object:
    """The JSON object in a reply: a fenced ```json block, else the outermost {...}; InvalidAnswer if none parses."""
    candidates = _FENCED_JSON.findall(text)
    start, end = text.find("{"), text.rfind("}")
    if start >= 0 and end > start:
        candidates.append(text[start : end + 1])
    for candidate in candidates:
        try:
            return json.loads(candidate)
        except json.JSONDecodeError:
            continue
    raise InvalidAnswer(f"no JSON object in the reply: {text[:200]!r}")


def parse_cluster_ids(text: str, num_completions: int) -> list[int]:
    """Exactly one integer ``cluster_id`` per key "1".."N" (a bare integer value is accepted too)."""
    answer = extract_json(text)
    if not isinstance(answer, dict):
        raise InvalidAnswer(f"the reply's JSON is a {type(answer).__name__}, not an object")
    expected = {str(i) for i in range(1, num_completions + 1)}
    if set(answer) != expected:
        raise InvalidAnswer(f"keys {sorted(answer)} instead of 1..{num_completions}")
    ids = []
    for key in sorted(expected, key=int):
        value = answer[key]
        cluster_id = value.get("cluster_id") if isinstance(value, dict) else value
        if not isinstance(cluster_id, int) or isinstance(cluster_id, bool):
            raise InvalidAnswer(f"answer {key}: cluster_id {cluster_id!r} is not an integer")
        ids.append(cluster_id)
    return ids


__all__ = ["BUILTIN_TEMPLATES", "DEGENERATE_CLUSTER_ID", "JudgeTemplate", "extract_json", "parse_cluster_ids"]
