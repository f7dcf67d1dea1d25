"""The program the sandbox runs (``python -I -S -B harness.py``, stdlib only). It computes; it decides nothing.

stdin: ``<n>\\n`` then the job, ``marshal``-encoded in n bytes (written by the trusted parent), then the program's own
input. The job:

- ``{"mode": "program", "source": ...}``: run the source as ``__main__`` with the rest of stdin as its input; the
  caller compares its stdout.
- ``{"mode": "calls", "source": ..., "prelude": ..., "entry_point": ..., "param": ..., "calls": [[expr, kind], ...],
  "asserts": [...]}``: run the source as ``__main__``, then evaluate each call expression (``param`` bound to the
  entry point) and write its value as plain data to the original stdout, one JSON document (written by hand
  with the C string encoder: importing ``json`` costs 15 ms, most of a program's start); the program's own
  prints go to stderr. ``kind`` is ``value`` (the value), ``truth`` (its truth value), ``list_node`` (the values
  of a linked list) or ``tree`` (a binary tree in level order, ``[v]`` for a node and ``null`` for a hole).
  ``asserts`` (only where the user opted in) are statements whose pass/fail this process reports itself.

The job holds no expected value: the caller compares. Whatever this process writes is a claim about what the
program computed, so a program that subverts the harness can only misreport its own results.
"""

import _json
import builtins
import marshal
import os
import sys

MAX_ITEMS = 1_000_000
MAX_DEPTH = 200


class NotPlainData(Exception):
    pass


def _read_job():
    header = b""
    while not header.endswith(b"\n"):
        chunk = os.read(0, 1)
        if not chunk:
            raise SystemExit("harness: no job on stdin")
        header += chunk
    size, data = int(header), b""
    while len(data) < size:
        chunk = os.read(0, size - len(data))
        if not chunk:
            raise SystemExit("harness: job cut short")
        data += chunk
    return marshal.loads(data)


def _encode(value, budget, depth=0):
    """Plain data in JSON: scalars as themselves, lists as lists, other built-in types tagged ``{"t", "v"}``.

    Subclasses of built-in types are read through the built-in type's own methods, so an overridden ``__eq__``,
    ``__iter__`` or ``__repr__`` changes nothing; any other type is not plain data."""
    budget[0] -= 1
    if budget[0] < 0 or depth > MAX_DEPTH:
        raise NotPlainData("result too large or too deeply nested")
    if value is None or type(value) is bool:
        return value
    if isinstance(value, int):
        number = int.__int__(value)
        return number if -(2**62) < number < 2**62 else {"t": "int", "v": hex(number)}
    if isinstance(value, float):
        number = float.__float__(value)
        return number if number - number == 0 else {"t": "float", "v": float.__repr__(number)}
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, list):
        return [_encode(item, budget, depth + 1) for item in list.__iter__(value)]
    if isinstance(value, tuple):
        return {"t": "tuple", "v": [_encode(item, budget, depth + 1) for item in tuple.__iter__(value)]}
    if isinstance(value, dict):
        items = dict.items(value)
        return {"t": "dict", "v": [[_encode(k, budget, depth + 1), _encode(v, budget, depth + 1)] for k, v in items]}
    if isinstance(value, frozenset):
        return {"t": "frozenset", "v": [_encode(item, budget, depth + 1) for item in frozenset.__iter__(value)]}
    if isinstance(value, set):
        return {"t": "set", "v": [_encode(item, budget, depth + 1) for item in set.__iter__(value)]}
    if isinstance(value, bytes):
        return {"t": "bytes", "v": bytes.hex(value)}
    if isinstance(value, complex):
        return {"t": "complex", "v": [complex.real.__get__(value), complex.imag.__get__(value)]}
    fractions, decimal = sys.modules.get("fractions"), sys.modules.get("decimal")
    if fractions is not None and isinstance(value, fractions.Fraction):
        return {"t": "fraction", "v": [hex(value.numerator), hex(value.denominator)]}
    if decimal is not None and isinstance(value, decimal.Decimal):
        return {"t": "decimal", "v": decimal.Decimal.__str__(value)}
    raise NotPlainData(f"a {type(value).__name__} is not plain data")


def decode(value):
    """``_encode``'s plain data back to Python values, in the trusted parent (never run in the sandbox). ValueError on
    anything else."""
    if value is None or type(value) in (bool, int, float, str):
        return value
    if type(value) is list:
        return [decode(item) for item in value]
    if type(value) is not dict or set(value) != {"t", "v"}:
        raise ValueError("not plain data")
    tag, body = value["t"], value["v"]
    if tag in ("tuple", "set", "frozenset"):
        return {"tuple": tuple, "set": set, "frozenset": frozenset}[tag](decode(item) for item in body)
    if tag == "dict":
        return {decode(k): decode(v) for k, v in body}
    if tag == "int":
        return int(body, 16)
    if tag == "float":
        return float(body)
    if tag == "bytes":
        return bytes.fromhex(body)
    if tag == "complex":
        return complex(*body)
    if tag == "fraction":
        from fractions import Fraction  # here, not at the top: the sandboxed program's start stays fast

        return Fraction(int(body[0], 16), int(body[1], 16))
    if tag == "decimal":
        from decimal import Decimal

        return Decimal(body)
    raise ValueError(f"unknown tag {tag!r}")


def _linked_list(head, budget):
    values, node = [], head
    while node is not None:
        if len(values) >= MAX_ITEMS:
            raise NotPlainData("linked list too long (or a cycle)")
        values.append(_encode(node.val, budget))
        node = node.next
    return values


def _tree(root, budget):
    order, queue, i = [], [root], 0
    while i < len(queue):
        node = queue[i]
        i += 1
        if node is None:
            order.append(None)
            continue
        if len(queue) > 2 * MAX_ITEMS:
            raise NotPlainData("tree too large (or a cycle)")
        order.append([_encode(node.val, budget)])
        queue.append(node.left)
        queue.append(node.right)
    while order and order[-1] is None:
        order.pop()
    return order


ENCODERS = {
    "value": _encode,
    "truth": lambda value, budget: bool(value),
    "list_node": _linked_list,
    "tree": _tree,
}


def _dumps(value):
    """JSON for the report: None, bool, int, finite float, str, list and dict with str keys (all _encode makes)."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if type(value) is str:
        return _json.encode_basestring_ascii(value)
    if type(value) is int:
        return int.__repr__(value)
    if type(value) is float:
        return float.__repr__(value)
    if type(value) is list:
        return "[" + ",".join(_dumps(item) for item in value) + "]"
    return "{" + ",".join(_json.encode_basestring_ascii(k) + ":" + _dumps(v) for k, v in value.items()) + "}"


def _describe(error):
    return f"{type(error).__name__}: {error}"[:500]


def _run_calls(job, namespace, write):
    results, asserts = [], []
    report = {"stage": "solution", "error": None, "results": results, "asserts": asserts}
    try:
        exec(compile(job["source"], "solution.py", "exec"), namespace)
        report["stage"] = "tests"
        if job.get("prelude"):
            exec(compile(job["prelude"], "tests.py", "exec"), namespace)
        scope = {}
        if job.get("entry_point"):
            scope[job.get("param") or "candidate"] = eval(job["entry_point"], namespace)
        budget = [MAX_ITEMS]
        for expression, kind in job["calls"]:
            try:
                results.append({"v": ENCODERS[kind](eval(expression, namespace, scope), budget)})
            except NotPlainData as error:
                results.append({"e": f"NotPlainData: {error}"})
                break
            except BaseException as error:  # the program's own exception (SystemExit included) fails this call
                results.append({"e": _describe(error)})
                break
        for statement in job.get("asserts", []):
            try:
                exec(compile(statement, "tests.py", "exec"), namespace, scope)
                asserts.append(True)
            except BaseException:
                asserts.append(False)
                break
    except BaseException as error:
        report["error"] = _describe(error)
    write(_dumps(report).encode())


def main():
    job = _read_job()
    namespace = {"__name__": "__main__", "__builtins__": builtins}
    # What site would have added (the sandbox runs with -S for speed): exit() and quit().
    import _sitebuiltins

    builtins.exit = _sitebuiltins.Quitter("exit", "Ctrl-D (i.e. EOF)")
    builtins.quit = _sitebuiltins.Quitter("quit", "Ctrl-D (i.e. EOF)")
    sys.set_int_max_str_digits(0)
    sys.path[:0] = job.get("path", [])
    if job["mode"] == "program":
        exec(compile(job["source"], "solution.py", "exec"), namespace)
        return
    results_fd = os.dup(1)
    os.dup2(2, 1)  # the program's prints go to stderr; stdout carries the report alone

    def write(data):
        view = memoryview(data)
        while view:
            view = view[os.write(results_fd, view) :]

    _run_calls(job, namespace, write)
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
