"""Test harness for function-style code tests, run inside the sandbox as the main program.

Reads a one-line nonce from stdin, then executes ``solution.py`` and each test statement of ``tests.json`` in one
namespace, and finally writes ``<nonce> <passed> <total>`` to stdout. Everything it needs after the solution starts
is bound beforehand, so patched builtins or modules change nothing; an audit hook (which no Python code can remove)
blocks the ways to reach the harness's frame and the nonce in it (frame, traceback and generator introspection, gc,
tracing, ctypes, /proc) and the ways to start a program without the hook. A solution that exits early, closes
stdout or fails a test never produces the line, and the caller scores only that line.
"""

import json
import os
import sys

BLOCKED_EVENTS = frozenset(
    {
        "sys._getframe",
        "sys._current_frames",
        "sys._current_exceptions",
        "sys.settrace",
        "sys.setprofile",
        "object.__getattr__",
        "gc.get_objects",
        "gc.get_referrers",
        "gc.get_referents",
        "os.exec",
        "os.posix_spawn",
        "os.spawn",
        "os.system",
        "subprocess.Popen",
        "pty.spawn",
    }
)


def _audit(event, args, blocked=BLOCKED_EVENTS, error=RuntimeError):
    if (
        event in blocked
        or event.startswith("ctypes.")
        or (event == "import" and args[0] in ("ctypes", "_ctypes"))
        or (event == "open" and isinstance(args[0], str | bytes) and str(args[0]).lstrip("b'").startswith("/proc"))
    ):
        raise error(f"blocked by the sandbox: {event}")


def _not_dumpable():
    """Forbid reading this process's memory through /proc from any other process."""
    import ctypes

    ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 4
    for name in ("ctypes", "_ctypes"):
        sys.modules.pop(name, None)


def _main():
    read, write, exit_now = os.read, os.write, os._exit
    run, build, failure, text = exec, compile, BaseException, str
    nonce = b""
    while not nonce.endswith(b"\n"):
        chunk = read(0, 64)
        if not chunk:
            exit_now(3)
        nonce += chunk
    with open("tests.json") as handle:
        spec = json.load(handle)
    with open("solution.py") as handle:
        source = handle.read()
    tests = [build(test, f"<test {i}>", "exec") for i, test in enumerate(spec["tests"])]
    total = len(tests)
    _not_dumpable()
    sys.addaudithook(_audit)
    namespace = {"__name__": "solution", "__builtins__": __builtins__}
    passed = 0
    try:
        run(build(source, "solution.py", "exec"), namespace)
        for test in tests:
            run(test, namespace)
            passed += 1
    except failure:
        pass
    write(1, b"\n" + nonce.strip() + b" " + text(passed).encode() + b" " + text(total).encode() + b"\n")
    exit_now(0)


if __name__ == "__main__":
    _main()
