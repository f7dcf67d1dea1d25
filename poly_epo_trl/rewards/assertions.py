"""A row's unit tests as the trusted parent sees them: calls for the sandbox, expected values kept here.

``plan_tests`` reads a row's tests (``def check(candidate): assert ...`` with an entry point, bare asserts, or
stdin/stdout cases) and reduces each assertion with ``ast`` to an expression the sandbox evaluates plus a comparison
made here against a literal expected value:

- ``X == E``, ``!=``, ``<``, ``<=``, ``>``, ``>=``, ``in``, ``not in`` (either side literal), ``X is None/True/False``;
- ``X`` and ``not X`` (the truth value of the call's result);
- ``abs(X - E) < T`` (or ``<=``) and ``math.isclose(X, E, ...)``;
- LeetCodeDataset's ``is_same_list(X, list_node(E))`` and ``is_same_tree(X, tree_node(E))``: the sandbox returns
  the list's values or the tree in level order, compared here with E's.

The expression sent to the sandbox never holds a comparison, so its result is a value the program computed, never a
verdict. A test that does not reduce (a loop, a helper comparing two calls) makes the plan ``unverifiable``.
"""

from __future__ import annotations

import ast
import json
import math
import operator
import threading
from dataclasses import dataclass, field
from typing import Any

OPERATORS = {
    ast.Eq: ("==", operator.eq),
    ast.NotEq: ("!=", operator.ne),
    ast.Lt: ("<", operator.lt),
    ast.LtE: ("<=", operator.le),
    ast.Gt: (">", operator.gt),
    ast.GtE: (">=", operator.ge),
    ast.In: ("in", lambda a, b: a in b),
    ast.NotIn: ("not in", lambda a, b: a not in b),
    ast.Is: ("is", operator.is_),
    ast.IsNot: ("is not", operator.is_not),
}
COMPARE = {symbol: fn for symbol, fn in OPERATORS.values()}
# CPython 3.11 keeps the AST builder's recursion counter in interpreter-wide state: when a thread switch lands inside
# ast.parse (a garbage collection running a finalizer that releases the GIL), another thread's ast.parse moves the
# counter and one of them fails with "SystemError: AST constructor recursion depth mismatch" (python/cpython#106905
# and its duplicates). The code reward plans tests in its worker threads, so parses take turns.
# tests/test_rewards_code.py reproduces the failure without the lock and fails once Python no longer has it.
_AST_PARSE_LOCK = threading.Lock()


def parse_python(source: str) -> ast.Module:
    """``ast.parse``, one thread at a time: safe to call from several threads at once."""
    with _AST_PARSE_LOCK:
        return ast.parse(source)


_NAMED_CONSTANTS = {"inf": math.inf, "nan": math.nan}
_UNSAFE_IN_SANDBOX = (ast.Compare, ast.BoolOp, ast.IfExp, ast.Lambda, ast.NamedExpr)


class BadTests(ValueError):
    """The row's tests cannot be read (the message says why); the row scores 0."""


class NotReducible(Exception):
    pass


@dataclass(frozen=True)
class Check:
    """One assertion: the sandbox evaluates ``expression``; the parent applies ``op`` to its value and ``expected``.

    ``kind`` is what the sandbox returns: ``value``, ``truth``, ``list_node`` (values in order) or ``tree`` (level
    order). For ``abs_lt``/``abs_le``, expected is (E, T); for ``isclose``, (E, keyword arguments)."""

    expression: str
    kind: str
    op: str
    expected: Any = None
    value_on_left: bool = True

    def passes(self, value: Any) -> bool:
        try:
            if self.op == "truthy":
                return value is True
            if self.op == "falsy":
                return value is False
            if self.op in ("abs_lt", "abs_le"):
                target, tolerance = self.expected
                gap = abs(value - target)
                return bool(gap < tolerance if self.op == "abs_lt" else gap <= tolerance)
            if self.op == "isclose":
                target, options = self.expected
                return math.isclose(value, target, **options)
            left, right = (value, self.expected) if self.value_on_left else (self.expected, value)
            return bool(COMPARE[self.op](left, right))
        except Exception:  # comparing the program's value with the expected one failed: not equal
            return False


@dataclass
class CallPlan:
    """Function tests: ``prelude`` (imports and helpers of the test file) runs after the solution, then the calls."""

    checks: list[Check]
    entry_point: str | None = None
    param: str = "candidate"
    prelude: str = ""
    unverifiable: str | None = None  # why some assertion did not reduce
    source: str = ""  # the whole test source, for the opt-in in-sandbox mode

    def job(self) -> dict[str, Any]:
        """What the sandbox receives: no expected value."""
        return {
            "mode": "calls",
            "prelude": self.prelude,
            "entry_point": self.entry_point,
            "param": self.param,
            "calls": [[c.expression, c.kind] for c in self.checks],
        }


@dataclass
class StdioPlan:
    """stdin/stdout cases: the program's stdout must equal the expected output up to trailing whitespace."""

    cases: list[tuple[str, str]] = field(default_factory=list)


def plan_tests(tests: Any, entry_point: str | None = None) -> CallPlan | StdioPlan:
    """The plan for one row's tests; BadTests when they cannot be read."""
    if isinstance(tests, str) and tests.strip().startswith("{"):
        try:
            tests = json.loads(tests)
        except json.JSONDecodeError as error:
            raise BadTests(f"tests look like JSON but do not parse: {error}") from None
    if isinstance(tests, dict):
        inputs, outputs = tests.get("inputs"), tests.get("outputs")
        if not isinstance(inputs, list) or not isinstance(outputs, list) or len(inputs) != len(outputs) or not inputs:
            raise BadTests("stdin/stdout tests need equally long, non-empty 'inputs' and 'outputs' lists.")
        return StdioPlan([(str(i), str(o)) for i, o in zip(inputs, outputs, strict=True)])
    if isinstance(tests, (list, tuple)) and tests and all(isinstance(t, str) for t in tests):
        tests = "\n".join(tests)
    if not isinstance(tests, str) or not tests.strip():
        raise BadTests(
            f"cannot read tests of type {type(tests).__name__}: use a list of assert statements, a string of test "
            "code, or {'inputs': [...], 'outputs': [...]}."
        )
    try:
        module = parse_python(tests)
    except (SyntaxError, ValueError) as error:
        raise BadTests(f"the tests do not parse: {error}") from None
    return _plan_module(module, tests, entry_point)


def _plan_module(module: ast.Module, source: str, entry_point: str | None) -> CallPlan:
    plan = CallPlan(checks=[], entry_point=entry_point, source=source)
    prelude: list[str] = []
    check_fn = None
    helpers = _defined_names(node for node in module.body if not isinstance(node, ast.Assert))
    for node in module.body:
        if isinstance(node, ast.FunctionDef) and node.name == "check":
            check_fn = node
        elif isinstance(node, ast.Assert):
            _add(plan, node, helpers)
        elif _is_call_of(node, "check"):
            if plan.entry_point is None and len(node.value.args) == 1:
                plan.entry_point = ast.unparse(node.value.args[0])
        elif _is_docstring(node):
            continue
        else:
            prelude.append(ast.unparse(node))
    if check_fn is not None:
        args = check_fn.args
        if len(args.args) != 1 or args.vararg or args.kwarg or args.kwonlyargs:
            raise BadTests("check() must take exactly one argument, the function under test.")
        plan.param = args.args[0].arg
        if plan.entry_point is None:
            raise BadTests("the tests define check(candidate) but the row has no entry_point to pass to it.")
        for node in check_fn.body:
            if isinstance(node, ast.Assert):
                _add(plan, node, helpers)
            elif not (_is_docstring(node) or isinstance(node, ast.Pass)):
                plan.unverifiable = plan.unverifiable or f"line {node.lineno}: {ast.unparse(node)[:80]!r}"
    plan.prelude = "\n".join(prelude)
    if not plan.checks and not plan.unverifiable:
        raise BadTests("the tests hold no assertion.")
    return plan


def _defined_names(nodes) -> frozenset[str]:
    """Names the test file itself defines (helpers, imports): their truth values are not the program's output."""
    names = set()
    for node in nodes:
        for child in ast.walk(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(child.name)
            elif isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store):
                names.add(child.id)
            elif isinstance(child, ast.alias):
                names.add((child.asname or child.name).split(".")[0])
    return frozenset(names)


def _add(plan: CallPlan, node: ast.Assert, helpers: frozenset[str]) -> None:
    try:
        check = reduce_assertion(node.test, helpers)
    except NotReducible as why:
        plan.unverifiable = plan.unverifiable or f"line {node.lineno}: {why}"
        return
    if check is not None:
        plan.checks.append(check)


def _is_call_of(node: ast.stmt, name: str) -> bool:
    return (
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Call)
        and isinstance(node.value.func, ast.Name)
        and node.value.func.id == name
    )


def _is_docstring(node: ast.stmt) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)


def reduce_assertion(test: ast.expr, helpers: frozenset[str] = frozenset()) -> Check | None:
    """The Check for ``assert <test>``; None when the assertion holds whatever the program does (both sides
    literal and true); NotReducible when it cannot be split into a computed value and a literal expected one.

    ``helpers`` are names the test file defines: ``assert helper(...)`` would let the sandbox compute the verdict."""
    if isinstance(test, ast.Call):
        special = _reduce_helper_call(test)
        if special is not None:
            return special
    if isinstance(test, ast.Compare):
        return _reduce_compare(test)
    negated = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
    target = test.operand if negated else test
    if not isinstance(target, ast.Call) or ast.unparse(target.func).split(".")[0] in helpers:
        raise NotReducible(f"the truth of {ast.unparse(test)[:60]!r} is not a value the program returns")
    return Check(_sandbox_expression(target), "truth", "falsy" if negated else "truthy")


def _reduce_compare(test: ast.Compare) -> Check | None:
    if len(test.ops) != 1:
        raise NotReducible("chained comparison")
    symbol, fn = OPERATORS[type(test.ops[0])]
    left, right = test.left, test.comparators[0]
    tolerance = _absolute_tolerance(left, symbol, right)
    if tolerance is not None:
        return tolerance
    left_literal, right_literal = _try_literal(left), _try_literal(right)
    if left_literal is not _MISSING and right_literal is not _MISSING:
        if fn(left_literal, right_literal):
            return None
        raise NotReducible("a comparison of two constants that is false")
    if right_literal is not _MISSING:
        value_side, expected, on_left = left, right_literal, True
    elif left_literal is not _MISSING:
        value_side, expected, on_left = right, left_literal, False
    else:
        raise NotReducible("neither side of the comparison is a constant")
    if symbol in ("is", "is not") and expected not in (None, True, False):
        raise NotReducible("'is' against a value other than None, True or False")
    return Check(_sandbox_expression(value_side), "value", symbol, expected, on_left)


def _absolute_tolerance(left: ast.expr, symbol: str, right: ast.expr) -> Check | None:
    """``abs(X - E) < T`` or ``abs(E - X) <= T``."""
    if symbol not in ("<", "<=") or not (
        isinstance(left, ast.Call)
        and isinstance(left.func, ast.Name)
        and left.func.id == "abs"
        and len(left.args) == 1
        and isinstance(left.args[0], ast.BinOp)
        and isinstance(left.args[0].op, ast.Sub)
    ):
        return None
    tolerance = _try_literal(right)
    difference = left.args[0]
    a, b = _try_literal(difference.left), _try_literal(difference.right)
    if tolerance is _MISSING or (a is _MISSING) == (b is _MISSING):
        return None
    value_side, target = (difference.left, b) if b is not _MISSING else (difference.right, a)
    op = "abs_lt" if symbol == "<" else "abs_le"
    return Check(_sandbox_expression(value_side), "value", op, (target, tolerance))


def _reduce_helper_call(test: ast.Call) -> Check | None:
    name = ast.unparse(test.func)
    if name in ("is_same_list", "is_same_tree") and len(test.args) == 2 and not test.keywords:
        builder = "list_node" if name == "is_same_list" else "tree_node"
        for value_side, expected_side in (test.args, test.args[::-1]):
            values = _built_from_literal(expected_side, builder)
            if values is not _MISSING:
                if name == "is_same_list":
                    return Check(_sandbox_expression(value_side), "list_node", "==", list(values or []))
                return Check(_sandbox_expression(value_side), "tree", "==", tree_level_order(values))
        raise NotReducible(f"{name} without a {builder}(<constant>) side")
    if name in ("math.isclose", "isclose") and len(test.args) == 2:
        options = {}
        for keyword in test.keywords:
            value = _try_literal(keyword.value)
            if keyword.arg not in ("rel_tol", "abs_tol") or value is _MISSING:
                raise NotReducible("isclose with options other than constant rel_tol / abs_tol")
            options[keyword.arg] = value
        for value_side, expected_side in (test.args, test.args[::-1]):
            expected = _try_literal(expected_side)
            if expected is not _MISSING:
                return Check(_sandbox_expression(value_side), "value", "isclose", (expected, options))
        raise NotReducible("isclose without a constant side")
    return None


def _built_from_literal(node: ast.expr, builder: str) -> Any:
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == builder
        and len(node.args) == 1
        and not node.keywords
    ):
        values = _try_literal(node.args[0])
        if values is not _MISSING and (values is None or isinstance(values, (list, tuple))):
            return values
    return _MISSING


def _sandbox_expression(node: ast.expr) -> str:
    """Source the sandbox may evaluate: no comparison inside, so what comes back is a value, never a verdict."""
    for child in ast.walk(node):
        if isinstance(child, _UNSAFE_IN_SANDBOX):
            raise NotReducible(f"the computed side {ast.unparse(node)[:60]!r} holds a comparison")
    return ast.unparse(node)


_MISSING = object()


def _try_literal(node: ast.expr) -> Any:
    try:
        return literal(node)
    except (ValueError, TypeError, SyntaxError, RecursionError):
        return _MISSING


def literal(node: ast.expr) -> Any:
    """A constant written in a test: Python literals plus ``inf``, ``float('inf')``, ``math.inf``, ``set()``."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        items = [literal(e) for e in node.elts]
        return {ast.List: list, ast.Tuple: tuple, ast.Set: set}[type(node)](items)
    if isinstance(node, ast.Dict):
        if any(k is None for k in node.keys):
            raise ValueError("dict unpacking")
        return {literal(k): literal(v) for k, v in zip(node.keys, node.values, strict=True)}
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        value = literal(node.operand)
        if type(value) not in (int, float, complex):
            raise ValueError("sign of a non-number")
        return -value if isinstance(node.op, ast.USub) else +value
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
        return ast.literal_eval(node)  # complex numbers such as 1+2j
    if isinstance(node, ast.Name) and node.id in _NAMED_CONSTANTS:
        return _NAMED_CONSTANTS[node.id]
    if isinstance(node, ast.Attribute) and ast.unparse(node) in ("math.inf", "math.nan"):
        return _NAMED_CONSTANTS[node.attr]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
        name, args = node.func.id, node.args
        if name == "float" and len(args) == 1 and isinstance(args[0], ast.Constant) and isinstance(args[0].value, str):
            return float(args[0].value)
        if name in ("set", "frozenset", "tuple", "list", "dict") and not args:
            return {"set": set, "frozenset": frozenset, "tuple": tuple, "list": list, "dict": dict}[name]()
    raise ValueError(f"not a constant: {ast.unparse(node)[:60]}")


def tree_level_order(values: Any) -> list:
    """LeetCodeDataset's ``tree_node(values)`` built and written in level order: ``[v]`` per node, None per hole,
    trailing holes dropped (the same form the sandbox returns)."""
    if not values:
        return []
    nodes = [[values[0], None, None]]
    queue, head, i = [nodes[0]], 0, 1
    while head < len(queue):
        node = queue[head]
        head += 1
        for side in (1, 2):
            if i < len(values) and values[i] is not None:
                node[side] = [values[i], None, None]
                queue.append(node[side])
            i += 1
    order, pending, head = [], [nodes[0]], 0
    while head < len(pending):
        node = pending[head]
        head += 1
        if node is None:
            order.append(None)
            continue
        order.append([node[0]])
        pending += [node[1], node[2]]
    while order and order[-1] is None:
        order.pop()
    return order
