"""The code reward: no correct solution scored 0, no forged pass scored 1, and a host that survives any program."""

import os
import shutil
import socket
import threading
import time
from pathlib import Path

import pytest
from bubblewrap import needs_bwrap, skip_without_bwrap
from leetcode_problems import PROBLEMS, SETUP
from shared_data import LEETCODE

from poly_epo_trl.rewards import CodeReward, SandboxLimits, SandboxUnavailable, extract_code, plan_tests
from poly_epo_trl.rewards.assertions import BadTests, CallPlan, StdioPlan, tree_level_order
from poly_epo_trl.rewards.code import _frame, code_blocks
from poly_epo_trl.rewards.sandbox import _UID_BASE, check_bwrap

LIMITS = SandboxLimits(timeout_seconds=5, cpu_seconds=5, memory_mb=512, max_output_bytes=1 << 16)


@pytest.fixture(scope="module")
def reward():
    skip_without_bwrap()
    return CodeReward(LIMITS, max_workers=2)


def fenced(code: str) -> str:
    return f"Here is my solution.\n```python\n{code}\n```\n"


def sandbox_processes() -> list[int]:
    """Live processes of this test process's throwaway uids (another process's sandboxes are not ours to count)."""
    first = _UID_BASE + (os.getpid() % 10_000) * 100
    own_uids = range(first, first + 100)
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if own_uids.start <= os.stat(f"/proc/{entry}").st_uid < own_uids.stop:
                    with open(f"/proc/{entry}/stat") as stat:
                        if stat.read().rsplit(")", 1)[1].split()[0] != "Z":
                            found.append(int(entry))
            except (OSError, IndexError):
                pass
    return found


@pytest.fixture(autouse=True)
def nothing_left_behind():
    yield
    assert sandbox_processes() == []
    runs = list(Path("/sys/fs/cgroup/memory").glob(f"**/poly_epo_sandbox_{os.getpid()}/r*"))
    assert runs == []


# --- extraction and test plans -------------------------------------------------------------------------------------


def test_extraction_prefers_the_block_that_defines_the_entry_point():
    text = "```python\nclass Solution:\n    pass\n```\nUsage:\n```python\nprint(Solution())\n```"
    assert extract_code(text, "Solution().f") == "class Solution:\n    pass\n"
    assert extract_code(text) == "print(Solution())\n"
    assert extract_code("```\nprint(1)\n```") == "print(1)\n"
    assert extract_code("```js\nx\n```") is None and extract_code("no code here") is None


def test_extraction_is_linear_on_hostile_text():
    hostile = "```python\n" * 200_000 + "x" * 100_000
    start = time.perf_counter()
    code_blocks(hostile)
    code_blocks("```" * 300_000)
    assert time.perf_counter() - start < 2.0


def test_assertion_shapes_reduce_to_calls_and_constants():
    plan = plan_tests(
        "def check(candidate):\n"
        "    assert candidate(nums = [1, [2, 3]], k = -1) == [[1], 'a', 2.5, True, None]\n"
        "    assert candidate(1) == None\n"
        "    assert None is candidate(2)\n"
        "    assert is_same_list(candidate(head = list_node([1,2])), list_node([2,1]))\n"
        "    assert is_same_tree(candidate(root = tree_node([1,None,2])), tree_node([1,2]))\n"
        "    assert abs(candidate(3) - 0.5) < 1e-6\n"
        "    assert math.isclose(candidate(4), 2.0, rel_tol=1e-9)\n"
        "    assert candidate(5) in [[1, 2], [2, 1]]\n"
        "    assert candidate(6) == inf\n"
        "    assert not candidate(7)\n"
        "    assert candidate(8)\n",
        "Solution().f",
    )
    assert isinstance(plan, CallPlan) and plan.unverifiable is None and plan.param == "candidate"
    kinds = [(c.kind, c.op) for c in plan.checks]
    assert kinds == [
        ("value", "=="),
        ("value", "=="),
        ("value", "is"),
        ("list_node", "=="),
        ("tree", "=="),
        ("value", "abs_lt"),
        ("value", "isclose"),
        ("value", "in"),
        ("value", "=="),
        ("truth", "falsy"),
        ("truth", "truthy"),
    ]
    job = repr(plan.job())
    for secret in ("'a', 2.5", "[2, 1]", "0.5", "[[1, 2], [2, 1]]", "inf"):
        assert secret not in job, secret
    assert plan.checks[0].passes([[1], "a", 2.5, True, None])
    assert plan.checks[0].passes([[1], "a", 2.5, 1, None])  # True == 1, as in Python
    assert not plan.checks[0].passes(((1,), "a", 2.5, True, None))


def test_unreducible_and_bad_tests():
    loop = plan_tests("def check(candidate):\n    for i in range(3):\n        assert candidate(i) == i\n", "f")
    assert loop.unverifiable and "for i" in loop.unverifiable
    two_calls = plan_tests("def check(candidate):\n    assert candidate(1) == candidate(2)\n", "f")
    assert "neither side" in two_calls.unverifiable
    verdict_in_sandbox = plan_tests("def check(candidate):\n    assert (candidate(1) == 3) == True\n", "f")
    assert "comparison" in verdict_in_sandbox.unverifiable
    helper = plan_tests("def ok(x):\n    return x == 3\ndef check(candidate):\n    assert ok(candidate(1))\n", "f")
    assert helper.unverifiable
    for bad, why in [
        (3, "cannot read tests"),
        ("def check(candidate):\n    assert candidate(1 ==", "do not parse"),
        ("def check(candidate):\n    assert candidate(1) == 1\n", "no entry_point"),
        ('{"inputs": ["1"], "outputs": []}', "equally long"),
        ("x = 1\n", "no assertion"),
    ]:
        with pytest.raises(BadTests, match=why):
            plan_tests(bad, None)
    assert isinstance(plan_tests({"inputs": ["1"], "outputs": ["2"]}), StdioPlan)
    assert plan_tests(["assert add(1, 2) == 3"]).checks[0].expression == "add(1, 2)"


def test_tree_level_order_matches_the_datasets_tree_node():
    namespace: dict = {}
    exec(SETUP, namespace)  # trusted: the dataset's own helpers, to compare against

    def reference(values):
        order, queue = [], [namespace["tree_node"](values)]
        while queue:
            node = queue.pop(0)
            if node is None:
                order.append(None)
                continue
            order.append([node.val])
            queue += [node.left, node.right]
        while order and order[-1] is None:
            order.pop()
        return order

    for values in (
        [],
        [1],
        [1, None, 2],
        [4, 2, 7, 1, 3, 6, 9],
        [3, 9, 20, None, None, 15, 7],
        [1, 2, None, 3, None, 4],
    ):
        assert tree_level_order(values) == reference(values)


# --- no false negatives, no false positives on real-style problems ---------------------------------------------------


@pytest.mark.slow
def test_problem_set_correct_solutions_pass_and_wrong_ones_fail(reward):
    completions, tests, entry_points, names = [], [], [], []
    for problem in PROBLEMS:
        for code, should_pass in [(problem["correct"], True)] + [(w, False) for w in problem["wrong"]]:
            completions.append(fenced(code))
            tests.append(problem["test"])
            entry_points.append(problem["entry_point"])
            names.append((problem["name"], should_pass))
    verdicts = reward.check_batch(completions, tests, entry_points, [SETUP] * len(tests))
    wrong = [(name, should, v) for (name, should), v in zip(names, verdicts, strict=True) if v.passed != should]
    assert wrong == []
    assert len(PROBLEMS) >= 30 and len(verdicts) - len(PROBLEMS) >= 40


# --- forgery: the policy cannot make the parent see a pass ---------------------------------------------------------

SECRET_TEST = (
    "def check(candidate):\n"
    "    assert candidate(key = 'alpha') == 73011\n"
    "    assert candidate(key = 'beta') == 'zq-118'\n"
    "    assert candidate(key = 'gamma') == [4, 4, 9]\n"
)
SECRET_MARKERS = ("73011", "zq-118", "[4, 4, 9]")
ANSWERS = "{'alpha': 73011, 'beta': 'zq-118', 'gamma': [4, 4, 9]}"


def solution(body: str, prefix: str = "") -> str:
    """A Solution().secret whose body is the forgery; a correct one would need the hidden answers."""
    indented = "\n".join("        " + line for line in body.splitlines())
    return f"{prefix}\nclass Solution:\n    def secret(self, key):\n{indented}\n"


LIAR = "class Liar:\n    def __eq__(self, o): return True\n    def __ne__(self, o): return False\n    def __hash__(self): return 0\n"
FORGERIES = {
    "lying_eq": solution("return Liar()", LIAR),
    "lying_int_subclass": solution("class I(int):\n    def __eq__(self, o): return True\nreturn I(1)"),
    "lying_str_subclass": solution("class S(str):\n    def __eq__(self, o): return True\nreturn S('x')"),
    "lying_list_subclass": solution("class L(list):\n    def __eq__(self, o): return True\nreturn L()"),
    "lying_dict_subclass": solution("class D(dict):\n    def __eq__(self, o): return True\nreturn D()"),
    "spoofed_class": solution("class X:\n    __class__ = int\n    def __eq__(self, o): return True\nreturn X()"),
    "raising_eq": solution("class E:\n    def __eq__(self, o): raise AssertionError\nreturn E()"),
    "raising_eq_exception_group": solution("class E:\n    def __eq__(self, o): raise KeyboardInterrupt\nreturn E()"),
    "lying_bool": solution(
        "class B:\n    def __bool__(self): return True\n    def __eq__(self, o): return True\nreturn B()"
    ),
    "generator": solution("return (x for x in [73011])"),
    "nan": solution("return float('nan')"),
    "sys_exit_at_import": solution("return 0", "import sys\nsys.exit(0)"),
    "os_exit_at_import": solution("return 0", "import os\nos._exit(0)"),
    "os_exit_in_call": solution("import os\nos._exit(0)"),
    "system_exit_in_call": solution("raise SystemExit(0)"),
    "keyboard_interrupt": solution("raise KeyboardInterrupt"),
    "fake_report_on_stdout": solution(
        'import os\nos.write(1, b\'{"stage": "tests", "error": null, "results": [{"v": 1}, {"v": 1}, '
        '{"v": 1}], "asserts": []}\')\nos._exit(0)'
    ),
    "fake_report_on_every_fd": solution(
        'import os\nfor fd in range(64):\n    try:\n        os.write(fd, b\'{"stage":"tests","error":null,'
        '"results":[{"v":true},{"v":true},{"v":true}],"asserts":[true,true]}\')\n    except OSError:\n'
        "        pass\nos._exit(0)"
    ),
    "patch_encoder": solution(
        "import sys\nh = sys.modules['__main__']\nh._encode = lambda v, b, d=0: True\n"
        "h.ENCODERS['value'] = lambda v, b: True\nreturn 1"
    ),
    "patch_builtins": solution(
        "return 1", "import builtins\nbuiltins.eval = lambda *a, **k: True\nbuiltins.type = lambda x: bool"
    ),
    "frame_walk_for_expected": solution(
        "import sys\nf = sys._getframe()\nfound = []\nwhile f:\n    found += [v for v in f.f_locals.values() "
        "if isinstance(v, (int, str, list))]\n    f = f.f_back\nreturn found[0] if found else None"
    ),
    "gc_scan_for_expected": solution(
        "import gc\nfor obj in gc.get_objects():\n    if isinstance(obj, dict) and 'calls' in obj:\n"
        "        return obj.get('expected', obj)\nreturn None"
    ),
    "read_tests_from_disk": solution(
        "import os\nfor root, dirs, files in os.walk('/'):\n    for f in files:\n        try:\n"
        "            t = open(os.path.join(root, f), errors='ignore').read()\n        except Exception:\n            continue\n"
        "        if 'zq-' in t:\n            return t[t.index('zq-'):t.index('zq-') + 6]\nreturn None"
    ),
    "read_hf_cache": solution(
        "import os, glob\nfor p in glob.glob('/root/.cache/**/*', recursive=True) + glob.glob('/home/**/*', recursive=True):\n"
        "    return p\nreturn None"
    ),
    "read_proc": solution(
        "import os\nseen = ''\nfor pid in os.listdir('/proc'):\n    for f in ('cmdline', 'environ'):\n        try:\n"
        "            seen += open(f'/proc/{pid}/{f}', 'rb').read().decode(errors='ignore')\n        except Exception:\n"
        "            pass\nreturn seen"
    ),
    "read_parent_memory": solution("import os\nreturn open(f'/proc/{os.getppid()}/mem', 'rb').read(10)"),
    "read_stdin_rest": solution("import sys\nreturn sys.stdin.read()"),
    "environment": solution("import os\nreturn dict(os.environ)"),
    "kill_parent": solution("import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\nreturn 0"),
    "kill_everything": solution("import os, signal\nos.kill(-1, signal.SIGKILL)\nreturn 0"),
    "fork_and_report_later": solution(
        'import os, time\nif os.fork() == 0:\n    time.sleep(0.5)\n    os.write(1, b\'{"stage":"tests","error":null,'
        '"results":[],"asserts":[]}\')\n    os._exit(0)\nreturn 0'
    ),
    "thread_outlives": solution(
        "import threading, os, time\ndef late():\n    time.sleep(0.2)\n    os._exit(0)\n"
        "threading.Thread(target=late).start()\nreturn Liar()",
        LIAR,
    ),
    "ctypes_memory": solution("import ctypes\nreturn ctypes.string_at(0x400000, 16)"),
    "network_to_host": solution(
        "import socket\ns = socket.create_connection(('127.0.0.1', PORT), timeout=2)\nreturn s.recv(100).decode()"
    ),
    "unix_socket_to_host": solution(
        "import socket\ns = socket.socket(socket.AF_UNIX)\ns.connect('\\0poly_epo_answers')\nreturn s.recv(100).decode()"
    ),
    "write_harness": solution("open('/sandbox/harness.py', 'w').write('')\nreturn 0"),
    "huge_output": solution("import sys\nwhile True:\n    sys.stderr.write('x' * 65536)"),
    "infinite_loop": solution("while True:\n    pass"),
    "recursion_bomb": solution("def f(n):\n    return f(n + 1)\nreturn f(0)"),
    "memory_bomb": solution("blocks = []\nwhile True:\n    blocks.append(bytearray(64 * 2**20))"),
    "fork_bomb": solution("import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass"),
    "disk_fill": solution("with open('/tmp/fill', 'wb') as f:\n    while True:\n        f.write(b'x' * 2**20)"),
    "constant_guess": solution("return 73011"),
    "setuid_root": solution("import os\nos.setuid(0)\nreturn open('/root/answers').read()"),
}


def _serve_answers(server: socket.socket, stop: threading.Event) -> None:
    server.settimeout(0.2)
    while not stop.is_set():
        try:
            connection, _ = server.accept()
            connection.sendall(ANSWERS.encode())
            connection.close()
        except OSError:
            continue


@pytest.mark.slow
def test_every_forgery_scores_zero(reward):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    unix = socket.socket(socket.AF_UNIX)
    unix.bind("\0poly_epo_answers")
    unix.listen()
    stop = threading.Event()
    threading.Thread(target=_serve_answers, args=(server, stop), daemon=True).start()
    port = server.getsockname()[1]
    names = sorted(FORGERIES)
    try:
        control = reward.check(fenced(solution(f"return {ANSWERS}[key]")), SECRET_TEST, "Solution().secret")
        assert control.passed  # the test can be passed, by knowing the answers
        verdicts = reward.check_batch(
            [fenced(FORGERIES[n].replace("PORT", str(port))) for n in names],
            [SECRET_TEST] * len(names),
            ["Solution().secret"] * len(names),
        )
    finally:
        stop.set()
        server.close()
        unix.close()
    forged = [(n, v) for n, v in zip(names, verdicts, strict=True) if v.passed]
    assert forged == []
    assert len(FORGERIES) >= 40
    outcomes = dict(zip(names, (v.outcome for v in verdicts), strict=True))
    assert outcomes["infinite_loop"] == "timeout"
    assert outcomes["memory_bomb"] == "memory"
    assert outcomes["huge_output"] == "output_limit"
    assert outcomes["lying_eq"] == "wrong_answer"


@needs_bwrap
@pytest.mark.slow
def test_expected_values_never_reach_the_sandbox():
    reward = CodeReward(SandboxLimits(timeout_seconds=20, max_output_bytes=64 << 20))
    spy = (
        "import gc, os, sys\nseen = [repr(o)[:2000] for o in gc.get_objects() if isinstance(o, (dict, list, str))]\n"
        "for root, dirs, files in os.walk('/'):\n    if root.startswith(('/proc', '/sys', '/usr/lib', '/dev', sys.prefix)):\n"
        "        continue\n    for f in files:\n        try:\n            seen.append(open(os.path.join(root, f), errors='ignore').read())\n"
        "        except Exception:\n            pass\nseen += [repr(sys.argv), repr(dict(os.environ)), sys.stdin.read()]\n"
        "sys.stderr.write('\\n'.join(seen))\n"
    )
    plan = plan_tests(SECRET_TEST, "Solution().secret")
    job = {**plan.job(), "source": spy + solution("return 0"), "path": reward.sandbox.python_path}
    result = reward.sandbox.run(_frame(job))
    seen = (result.stdout + result.stderr).decode(errors="replace")
    assert "secret" in seen and len(seen) > 1000  # the spy ran and saw its own job
    for marker in SECRET_MARKERS:
        assert marker not in seen


# --- the host survives ---------------------------------------------------------------------------------------------


def _processes() -> dict[int, tuple[int, int, str]]:
    """Every live process: pid -> (parent pid, resident MB, command line)."""
    found = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/status") as status:
                fields = dict(line.split(":", 1) for line in status if ":" in line)
            with open(f"/proc/{name}/cmdline", "rb") as cmdline:
                command = cmdline.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:  # gone meanwhile
            continue
        resident = int(fields.get("VmRSS", "0 kB").split()[0]) // 1024
        found[int(name)] = (int(fields["PPid"]), resident, command)
    return found


def _sandbox_leftovers(before: set[int]) -> dict[int, tuple[int, int, str]]:
    """Processes started since ``before`` that are this test's descendants or a bubblewrap: what a bomb that got out
    of its sandbox's limits would leave. Other processes of a busy host (CI's installs) are not counted."""
    now = _processes()

    def ours(pid: int) -> bool:
        while pid > 1 and pid in now:
            if pid == os.getpid():
                return True
            pid = now[pid][0]
        return False

    return {pid: now[pid] for pid in now if pid not in before and (ours(pid) or "bwrap" in now[pid][2])}


@pytest.mark.parametrize("bomb", ["fork_bomb", "memory_bomb", "disk_fill"])
@pytest.mark.slow
def test_bombs_leave_the_host_as_it_was(reward, bomb):
    """Each bomb is checked on what it leaves, and on nothing another process of a busy host moves: no process it
    started (a forked child, the process holding its memory or its tmpfs /tmp) outlives the check, and the disk fill's
    file never appears in the host's /tmp. (Host-wide counts, free memory and free disk move by hundreds of MB beside
    CI's own installs, so they are not the measure.)"""
    assert not os.path.exists("/tmp/fill")
    before = set(_processes())
    verdict = reward.check(fenced(FORGERIES[bomb]), SECRET_TEST, "Solution().secret")
    assert not verdict.passed
    deadline = time.time() + 15
    while (left := _sandbox_leftovers(before)) and time.time() < deadline:
        time.sleep(0.1)
    assert not left, left
    assert not os.path.exists("/tmp/fill")


def test_sandbox_leftovers_sees_a_process_that_outlives_its_check():
    """The measure above can fail: a child of this test started after the snapshot is seen, with its memory."""
    import subprocess
    import sys

    before = set(_processes())
    child = subprocess.Popen([sys.executable, "-c", "import time; block = bytearray(80 * 2**20); time.sleep(30)"])
    try:
        deadline = time.time() + 10
        while not (left := _sandbox_leftovers(before)).get(child.pid, (0, 0, ""))[1] >= 64 and time.time() < deadline:
            time.sleep(0.05)
        assert left[child.pid][1] >= 64
    finally:
        child.kill()
        child.wait()
    assert child.pid not in _sandbox_leftovers(before)


# --- bad rows, metrics, modes --------------------------------------------------------------------------------------


def test_bad_rows_score_zero_with_a_reason_and_the_batch_goes_on(reward):
    good = fenced("def add(a, b):\n    return a + b")
    metrics: dict[str, float] = {}
    extra: dict[str, list] = {}
    rewards = reward(
        [good, good, good, good, "no code", fenced("def add(a, b)\n    return a")],
        [["assert add(1, 2) == 3"], "def check(c):\n    assert c(1 ==", 3, ["assert add(1, 2) == 3"]] * 1
        + [["assert add(1, 2) == 3"]] * 2,
        entry_point=[None, "add", None, "nope()"] + [None] * 2,
        log_metric=metrics.__setitem__,
        log_extra=extra.__setitem__,
    )
    assert rewards == [1.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    assert extra["code_outcome"] == ["pass", "bad_test", "bad_test", "runtime_error", "no_code", "syntax_error"]
    assert metrics["code/pass"] == pytest.approx(1 / 6) and metrics["code/bad_test"] == pytest.approx(2 / 6)
    assert set(metrics) >= {"code/timeout", "code/memory", "code/wrong_answer", "code/runtime_error", "code/no_code"}


@needs_bwrap
def test_unverifiable_tests_need_the_opt_in():
    test = "def check(candidate):\n    for x in [1, 2]:\n        assert candidate(x) == x + 1\n"
    code = fenced("def inc(x):\n    return x + 1")
    strict = CodeReward(LIMITS).check(code, test, "inc")
    assert not strict.passed and strict.outcome == "unverifiable_test"
    opted = CodeReward(LIMITS, trust_mode="sandbox_asserts")
    metrics: dict[str, float] = {}
    assert opted([code], [test], ["inc"], log_metric=metrics.__setitem__) == [1.0]
    assert metrics["code/sandbox_verdicts"] == 1.0
    assert not opted.check(fenced("def inc(x):\n    return x"), test, "inc").passed


def test_stdin_stdout_cases_with_setup(reward):
    tests = {"inputs": ["2\n", "5\n"], "outputs": ["4\n", "10"]}
    good = fenced("n = int(input())\nprint(double(n))")
    bad = fenced("n = int(input())\nprint(n + 2)")
    setup = "def double(x):\n    return 2 * x\n"
    assert reward([good, bad], [tests, tests], setup_code=[setup, setup]) == [1.0, 0.0]


def test_missing_bubblewrap_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(SandboxUnavailable, match=r"apt-get install bubblewrap.*code_sandbox: rlimits"):
        check_bwrap.__wrapped__()


def test_weaker_rlimits_mode_still_scores():
    reward = CodeReward(LIMITS, isolation="rlimits")
    assert reward.sandbox.describe()["namespaces"] is False
    problem = PROBLEMS[0]
    assert reward.check(fenced(problem["correct"]), problem["test"], problem["entry_point"], SETUP).passed
    assert not reward.check(fenced(problem["wrong"][1]), problem["test"], problem["entry_point"], SETUP).passed


# --- thread safety -------------------------------------------------------------------------------------------------


class _Finalizer:
    """A reference cycle whose finalizer lets another thread run: a garbage collection inside ``ast.parse`` then
    switches threads mid-parse, as it did after the code reward's sandboxes ran."""

    def __init__(self) -> None:
        self.me = self

    def __del__(self) -> None:
        time.sleep(0)


def _parse_in_threads(parse, sources: list[str], seconds: float, threads: int = 4) -> tuple[list[str], float]:
    """Rounds of ``threads`` threads that parse ``sources`` 1, 2, ... times each, with garbage to collect, and end at
    different times (as a thread pool's workers do), until a SystemError or ``seconds``: the errors, and the seconds
    until the first (``seconds`` when none)."""
    errors: list[str] = []

    def work(repeats: int) -> None:
        for _ in range(repeats):
            for source in sources:
                for _ in range(10):
                    _Finalizer()
                try:
                    parse(source)
                except SystemError as error:
                    errors.append(str(error))

    start = time.monotonic()
    while not errors and time.monotonic() - start < seconds:
        workers = [threading.Thread(target=work, args=(1 + i,)) for i in range(threads)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
    return errors, (time.monotonic() - start if errors else seconds)


# deeply nested asserts: a thread switch inside their parse moves the shared counter by many levels
NESTED = "\n".join(f"assert f({i}, {list(range(20))}) == {{'a': ({i}, [1, [2, [3, [4]]]])}}" for i in range(200))


def _real_tests() -> str:
    """Real rows' tests in one module (LeetCodeDataset's, else this file's problems)."""
    from poly_epo_trl.rewards.leetcode import load_rows

    if LEETCODE.exists():
        return "\n".join(row["test"] for row in load_rows(LEETCODE, stride=19))
    return "\n".join(problem["test"] for problem in PROBLEMS)


@pytest.mark.slow
def test_parsing_tests_from_many_threads_never_fails_and_the_lock_is_still_needed():
    """Unlocked, ``ast.parse`` from several threads fails on this Python (the day it does not, drop
    ``assertions._AST_PARSE_LOCK``); the code reward's parse, given three times as long, never does."""
    import ast

    from poly_epo_trl.rewards.assertions import parse_python

    errors, needed = _parse_in_threads(ast.parse, [_real_tests()], seconds=60)
    assert errors and "recursion depth mismatch" in errors[0], (
        "ast.parse ran 60 s in 4 threads without the 'AST constructor recursion depth mismatch' SystemError: this "
        "Python no longer needs assertions._AST_PARSE_LOCK."
    )
    errors, _ = _parse_in_threads(parse_python, [NESTED, _real_tests()], seconds=max(3 * needed, 5.0))
    assert errors == []
    errors, _ = _parse_in_threads(lambda tests: plan_tests(tests, "f"), [NESTED], seconds=max(needed, 3.0))
    assert errors == []


@pytest.mark.shared_data
@needs_bwrap
def test_scoring_real_programs_from_several_threads_at_once_repeatedly():
    """The code reward's own thread pool, over and over, with garbage collected mid-parse: every correct program
    scores 1 and nothing raises (it raised SystemError 4 times in 4 before the parse took turns)."""
    from poly_epo_trl.rewards.leetcode import load_rows

    if LEETCODE.exists():
        rows = load_rows(LEETCODE, stride=61)[:16]
        completions = [f"```python\n{row['completion']}\n```" for row in rows]
        tests, entry_points, setups = (
            [r["test"] for r in rows],
            [r["entry_point"] for r in rows],
            [r["prompt"] for r in rows],
        )
    else:
        completions = [f"```python\n{p['correct']}\n```" for p in PROBLEMS]
        tests, entry_points = [p["test"] for p in PROBLEMS], [p["entry_point"] for p in PROBLEMS]
        setups = [SETUP] * len(PROBLEMS)
    garbage = threading.Event()

    def make_garbage() -> None:
        while not garbage.is_set():
            _Finalizer()
            time.sleep(0.001)

    reward = CodeReward(LIMITS, max_workers=4)
    maker = threading.Thread(target=make_garbage)
    maker.start()
    try:
        for _ in range(3):
            verdicts = reward.check_batch(completions, tests, entry_points, setups)
            assert [v.outcome for v in verdicts] == ["pass"] * len(completions), [v.detail for v in verdicts]
    finally:
        garbage.set()
        maker.join()
