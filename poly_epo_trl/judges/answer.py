"""Cluster by final answer: for tasks where the answer is the strategy, and for offline tests.

How ``auto`` reads a completion's answer, as people write it:

1. Where the completion holds ``<answer>...</answer>`` tags (the format of the GRPO cookbooks and course), only the
   last tagged answer is read.
2. The last ``\\boxed{}`` there is the answer.
3. Else, where the whole answer is a bare arithmetic expression (``(25 - 5) * 3``: a countdown equation), the answer
   is the expression, the same whatever the order of the terms of a sum or the factors of a product: ``(1 + 2) * 3``
   and ``3 * (2 + 1)`` are one answer, ``25 - 5`` and ``5 - 25`` two. A worked line with its result (``3 + 4 = 7``)
   is the result, 7.
4. Else the last number, ``\\frac{a}{b}`` read as ``a/b``: ``1/2``, ``0.5``, ``\\frac{1}{2}`` and ``2/4`` are one
   answer (``answer_key``: a rational number's lowest terms).
5. Else the whole text, when it is a short answer (at most ``SHORT_ANSWER_WORDS`` words: a name or a word a task asks
   for); longer text with none of these is no answer. In a group where any completion's answer is boxed, a number or
   an expression, a completion with none of these is no answer however short ("Let me think again." is not a
   strategy of a math group).

No answer is degenerate (id 100): under the set objective distinct non-answers would count as distinct strategies,
so rambling, or a short aside in a math group, adds none.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from ..text import final_text, last_boxed, normalize_answer
from .base import ClusteringJudge, Clusters

_NUMBER = re.compile(r"-?\d+(?:[.,]\d+)*(?:/\d+)?")
ANSWER_MODES = ("auto", "boxed", "last_number", "text")
SHORT_ANSWER_WORDS = 5  # auto mode: a completion with no boxed answer and no number is its answer up to this long
NUMERIC_KINDS = ("boxed", "number", "expression")  # answers that make a short text beside them no answer
_RATIONAL = re.compile(r"-?\d+(?:\.\d+)?(?:/-?\d+)?")
_LATEX_FRACTION = re.compile(r"(-?)\\[dt]?frac\{(-?\d+)\}\{(-?\d+)\}")
_LATEX_FRACTION_IN_TEXT = re.compile(r"\\[dt]?frac\s*\{\s*(-?\d+)\s*\}\s*\{\s*(-?\d+)\s*\}")
_ANSWER_TAG = re.compile(r"<answer>(.*?)</answer>", re.DOTALL | re.IGNORECASE)
_EXPRESSION = re.compile(r"[\d\s+\-*/().×÷·]+")  # what an arithmetic expression may hold
_OPERATOR = re.compile(r"\d\s*[)]*\s*[+\-*/×÷·]\s*[(]*\s*-?\d")  # an operator between two numbers
MAX_EXPRESSION_CHARS = 200


@dataclass(frozen=True)
class Answer:
    """A completion's final answer: its ``kind`` ("boxed", "number", "expression" or "text") and its ``text``."""

    kind: str
    text: str


def answer_key(answer: str) -> str:
    """What two answers share when they are one strategy: a rational number's lowest terms (``1/2``, ``0.5``,
    ``\\frac{1}{2}`` and ``\\dfrac{2}{4}`` are all ``1/2``), any other answer itself. Symbolic equivalence beyond
    rationals is the math reward's (math-verify), not this judge's."""
    latex = _LATEX_FRACTION.fullmatch(answer)
    text = f"{latex.group(1)}{latex.group(2)}/{latex.group(3)}" if latex else answer
    if len(text) > 64 or not _RATIONAL.fullmatch(text):  # no exponents: 1e999999999 is no number to expand
        return answer
    try:
        return str(Fraction(text))
    except ZeroDivisionError:
        return answer


def expression_key(expression: str) -> str | None:
    """An arithmetic expression (numbers, + - * / and brackets; ``×``, ``÷`` and ``·`` read as * and /) as one key
    for all its orderings: the terms of a sum (with their signs) and the factors of a product (with their side of a
    division) sorted, numbers in lowest terms. None when it is not such an expression."""
    text = expression.replace("×", "*").replace("·", "*").replace("÷", "/")
    if len(text) > MAX_EXPRESSION_CHARS or "**" in text or "//" in text:
        return None
    try:
        tree = ast.parse(text.strip(), mode="eval").body
        return _canonical(tree)
    except (SyntaxError, ValueError, ZeroDivisionError):
        return None


def looks_like_expression(text: str) -> bool:
    """Whether ``text`` is written as a bare arithmetic expression: numbers and operators only (no ``=``), an operator
    between two numbers, and not a lone number or fraction (``-3``, ``1/2``)."""
    return bool(
        _EXPRESSION.fullmatch(text) and _OPERATOR.search(text) and not _RATIONAL.fullmatch(text.replace(" ", ""))
    )


def _canonical(node: ast.AST) -> str:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return str(Fraction(str(node.value)))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        inner = _canonical(node.operand)
        return f"-({inner})" if isinstance(node.op, ast.USub) else inner
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
        terms = sorted(_flatten(node, ast.Add, ast.Sub))
        return "(" + "".join(terms) + ")"
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.Div)):
        factors = sorted(_flatten(node, ast.Mult, ast.Div, signs=("*", "/")))
        return "[" + "".join(factors) + "]"
    raise ValueError(f"not arithmetic: {ast.dump(node)[:80]}")


def _flatten(node: ast.AST, keep: type, invert: type, signs: tuple[str, str] = ("+", "-"), sign: int = 0) -> list[str]:
    """The operands of a chain of ``keep`` and ``invert`` (``a - b + c``: +a, -b, +c), each with its sign."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, (keep, invert)):
        flipped = sign ^ isinstance(node.op, invert)
        return _flatten(node.left, keep, invert, signs, sign) + _flatten(node.right, keep, invert, signs, flipped)
    if keep is ast.Add and isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        return _flatten(node.operand, keep, invert, signs, sign ^ isinstance(node.op, ast.USub))  # -5 + 25: 25 - 5
    return [signs[sign] + _canonical(node)]


def _plain(text: str) -> str:
    """``text`` with ``\\frac{a}{b}`` written ``a/b`` and no dollar signs."""
    return _LATEX_FRACTION_IN_TEXT.sub(r"\1/\2", text).replace("$", "")


def read_answer(text: str, mode: str = "auto") -> Answer | None:
    """The completion's final answer under ``mode`` (see the module), with its kind; None when it has none.

    - ``boxed``: the last ``\\boxed{}``; ``last_number``: the last number (in the last ``<answer>`` tags where there
      are some); ``text``: the whole normalised text; ``auto``: the module's steps."""
    if mode == "text":
        return Answer("text", normalize_answer(text)) if normalize_answer(text) else None
    tagged = _ANSWER_TAG.findall(text)
    region = tagged[-1] if tagged and mode != "boxed" else text
    if mode in ("auto", "boxed"):
        boxed = last_boxed(region)
        if boxed is not None or mode == "boxed":
            return Answer("boxed", normalize_answer(boxed)) if boxed and boxed.strip() else None
    plain = _plain(region).strip().rstrip(".")
    if mode == "auto" and looks_like_expression(plain) and expression_key(plain) is not None:
        return Answer("expression", " ".join(plain.split()))
    numbers = _NUMBER.findall(plain)
    if numbers:
        return Answer("number", numbers[-1].replace(",", ""))
    if mode == "last_number" or len(region.split()) > SHORT_ANSWER_WORDS:
        return None
    return Answer("text", normalize_answer(region)) if normalize_answer(region) else None


def final_answer(text: str, mode: str = "auto") -> str | None:
    """The completion's final answer under ``mode`` (``read_answer``) as text; None when it has none."""
    answer = read_answer(text, mode)
    return answer.text if answer is not None else None


def strategy_key(answer: Answer) -> str:
    """What two answers share when they are one strategy: an expression's ordering-free key, a number's lowest
    terms (``answer_key``), any other answer itself."""
    if answer.kind == "expression":
        return "expression " + (expression_key(answer.text) or answer.text)
    return answer_key(answer.text)


def mode_key(answer: str) -> str:
    """The answer judge's key of an answer already read from a completion (a vote's answer): an arithmetic
    expression's ordering-free key, a number's lowest terms, any other answer itself. Two answers with one key are one
    mode of a problem's correct answers (``evaluation.report``'s PCMD)."""
    text = str(answer)
    key = expression_key(text) if looks_like_expression(text) else None
    return "expression " + key if key is not None else answer_key(text)


class AnswerJudge(ClusteringJudge):
    """Same final answer (``read_answer``, ``strategy_key``), same cluster; no answer, degenerate (id 100). Of an
    agent's trajectory it reads the final answer (``text.final_text``: the last assistant message's words)."""

    name = "answer"

    @staticmethod
    def view(completion: Any, agent: bool = False) -> str:
        return final_text(completion)

    def __init__(self, mode: str = "auto", **kwargs) -> None:
        if mode not in ANSWER_MODES:
            raise ValueError(f"Unknown answer mode {mode!r}: use one of {ANSWER_MODES}.")
        super().__init__(**kwargs)
        self.mode = mode

    async def acluster(self, prompt: str, completions: list[str]) -> Clusters:
        """Ids by final answer; each strategy is named by its answer. In a group with a boxed, numeric or expression
        answer, a short text answer is none."""
        answers = [read_answer(completion, self.mode) for completion in completions]
        if self.mode == "auto" and any(a is not None and a.kind in NUMERIC_KINDS for a in answers):
            answers = [None if a is not None and a.kind == "text" else a for a in answers]
        ids: dict[str, int] = {}
        labels = [
            self.degenerate_cluster_id if a is None else ids.setdefault(strategy_key(a), len(ids)) for a in answers
        ]
        return Clusters(labels, [None if a is None else f"answer {a.text}" for a in answers])
