"""The code reward and its sandbox, including programs that try to escape, hang, leak or forge a pass."""

import os
import socket
import threading
import time
from pathlib import Path

import pytest

from poly_epo_trl.rewards import SandboxLimits, code_reward, extract_code, parse_tests, run_python
from poly_epo_trl.rewards.code import check_code
from poly_epo_trl.rewards.sandbox import _is_running

LIMITS = SandboxLimits(timeout_seconds=3, cpu_seconds=3, memory_mb=512, max_output_bytes=1 << 16)
ADD_TESTS = ["assert add(1, 2) == 3", "assert add(-2, 2) == 0"]


def fenced(code: str) -> str:
    return f"Here is my solution.\n```python\n{code}\n```\n"


def sandbox_dirs() -> set[str]:
    return {p.name for p in Path("/tmp").iterdir() if p.name.startswith("poly_epo_sandbox_")}


def processes_of_sandbox_users() -> list[int]:
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.stat(f"/proc/{entry}").st_uid >= 200_000 and _is_running(entry):
                    pids.append(int(entry))
            except OSError:
                pass
    return pids


@pytest.fixture(autouse=True)
def nothing_left_behind():
    before = sandbox_dirs()
    yield
    assert sandbox_dirs() == before
    assert processes_of_sandbox_users() == []


def test_extract_code_takes_the_last_block():
    text = "```python\nx = 1\n```\nbetter:\n```py\nx = 2\n```"
    assert extract_code(text) == "x = 2\n"
    assert extract_code("```\nprint(1)\n```") == "print(1)\n"
    assert extract_code("no code here") is None


def test_parse_tests_formats():
    assert parse_tests(ADD_TESTS) == ("function", ADD_TESTS)
    assert parse_tests("def check(f):\n    assert f(1)", "add") == (
        "function",
        ["def check(f):\n    assert f(1)", "check(add)"],
    )
    assert parse_tests('{"inputs": ["1"], "outputs": ["2"]}') == ("stdio", [("1", "2")])
    with pytest.raises(ValueError, match="equally long"):
        parse_tests({"inputs": ["1"], "outputs": []})
    with pytest.raises(ValueError, match="Cannot read tests"):
        parse_tests(3)


def test_correct_and_wrong_solutions():
    completions = [
        fenced("def add(a, b):\n    return a + b"),
        fenced("def add(a, b):\n    return a - b"),
        "def add(a, b): return a + b",  # no code block
        fenced("def add(a, b)\n    return a + b"),  # syntax error
    ]
    assert code_reward(completions, [ADD_TESTS] * 4, limits=LIMITS) == [1.0, 0.0, 0.0, 0.0]


def test_leetcode_check_and_entry_point():
    code = fenced(
        "class Solution:\n    def twoSum(self, nums, target):\n        seen = {}\n"
        "        for i, x in enumerate(nums):\n            if target - x in seen:\n"
        "                return [seen[target - x], i]\n            seen[x] = i"
    )
    check = (
        "def check(candidate):\n    assert candidate([2, 7, 11, 15], 9) == [0, 1]\n"
        "    assert candidate([3, 3], 6) == [0, 1]"
    )
    rewards = code_reward(
        [code, fenced("class Solution:\n    def twoSum(self, nums, target):\n        return [0, 1]")],
        [check, check],
        entry_point=["Solution().twoSum"] * 2,
        limits=LIMITS,
    )
    assert rewards == [1.0, 1.0]  # the second passes these two weak tests too: rewards are only as good as tests
    check_more = check + "\n    assert candidate([1, 5, 9], 14) == [1, 2]"
    assert code_reward(
        [code, fenced("class Solution:\n    def twoSum(self, nums, target):\n        return [0, 1]")],
        [check_more] * 2,
        entry_point=["Solution().twoSum"] * 2,
        limits=LIMITS,
    ) == [1.0, 0.0]


def test_stdin_stdout_cases():
    tests = {"inputs": ["2\n", "5\n"], "outputs": ["4\n", "10"]}
    good = fenced("n = int(input())\nprint(n * 2)")
    bad = fenced("n = int(input())\nprint(n + 2)")  # right on the first case only
    assert code_reward(
        [good, bad, good], [tests, tests, '{"inputs": ["3"], "outputs": ["6  \\n\\n"]}'], limits=LIMITS
    ) == [1.0, 0.0, 1.0]


ADVERSARIAL = {
    "infinite_loop": "def add(a, b):\n    while True:\n        pass",
    "fork_bomb": "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass",
    "memory_hog": "blocks = []\nwhile True:\n    blocks.append(bytearray(100 * 2**20))",
    "exit_before_tests": "import sys\nsys.exit(0)",
    "os_exit_before_tests": "import os\nos._exit(0)",
    "patch_harness": "import builtins, __main__\nbuiltins.exec = lambda *a, **k: None\nbuiltins.str = lambda x: '2'\n"
    "__main__._main = lambda: None\ndef add(a, b):\n    return 0",
    "forge_via_frames": "import sys\ndef add(a, b):\n    frame = sys._getframe(1)\n"
    "    while 'nonce' not in frame.f_locals:\n"
    "        frame = frame.f_back\n    print(frame.f_locals['nonce'].decode().strip(), 2, 2, flush=True)\n"
    "    import os\n    os._exit(0)",
    "forge_via_generator": "def add(a, b):\n    def probe():\n        yield gen.gi_frame.f_back\n    gen = probe()\n"
    "    frame = next(gen)\n    while 'nonce' not in frame.f_locals:\n        frame = frame.f_back\n"
    "    print(frame.f_locals['nonce'].decode().strip(), 2, 2, flush=True)\n    import os\n    os._exit(0)",
    "forge_via_gc": "import gc\ndef add(a, b):\n    for obj in gc.get_objects():\n        pass\n    return a + b",
    "read_parent_memory": "import os\ndef add(a, b):\n    open(f'/proc/{os.getppid()}/mem', 'rb')\n    return a + b",
    "spawn_unhooked_python": "import subprocess, sys\nsubprocess.run([sys.executable, '-c', 'print(1)'])\n"
    "def add(a, b):\n    return a + b",
    "huge_output": "import sys\nwhile True:\n    sys.stdout.write('x' * 65536)",
    "kill_parent": "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\ndef add(a, b):\n    return a + b",
    "kill_everything": "import os, signal\nos.kill(-1, signal.SIGKILL)",
}


@pytest.mark.parametrize("name", sorted(ADVERSARIAL))
def test_adversarial_programs_score_zero(name):
    start = time.perf_counter()
    passed, result = check_code(fenced(ADVERSARIAL[name]), ADD_TESTS, limits=LIMITS)
    assert not passed
    assert time.perf_counter() - start < LIMITS.timeout_seconds + 5
    if name == "infinite_loop":  # stopped by the wall-clock timeout or the CPU-time limit, whichever came first
        assert result.timed_out or result.returncode < 0
    if name == "huge_output":
        assert result.output_exceeded and len(result.stdout) <= LIMITS.max_output_bytes


def test_no_secrets_in_the_sandbox(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-secret-123")
    monkeypatch.setenv("HF_TOKEN", "hf_test_secret_456")
    code = (
        "import os\nprint(sorted(os.environ.items()))\n"
        "for path in (f'/proc/{os.getppid()}/environ', '/proc/1/environ'):\n"
        "    try:\n        print(open(path, 'rb').read())\n    except OSError as e:\n        print('denied', path)\n"
    )
    result = run_python({"main.py": code}, ["main.py"], limits=LIMITS)
    assert result.returncode == 0, result.stderr
    assert "secret" not in result.stdout
    assert "ANTHROPIC" not in result.stdout and "HF_TOKEN" not in result.stdout
    assert "denied" in result.stdout


def test_writes_stay_inside_the_sandbox(tmp_path):
    marker = f"poly_epo_escape_{os.getpid()}"
    targets = [f"/tmp/{marker}", f"/var/tmp/{marker}", f"/dev/shm/{marker}", os.path.expanduser(f"~/{marker}")]
    code = "import os\n" + "".join(
        f"try:\n    open({t!r}, 'w').write('x')\n    print('wrote', {t!r})\n"
        f"except OSError as e:\n    print('denied', {t!r})\n"
        for t in [*targets, str(tmp_path / marker)]
    )
    result = run_python({"main.py": code}, ["main.py"], limits=LIMITS)
    assert result.returncode == 0, result.stderr
    for target in [*targets, str(tmp_path / marker)]:
        assert not os.path.exists(target), target
    assert f"denied {tmp_path / marker}" in result.stdout


def test_no_network():
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(5)
    port = server.getsockname()[1]
    accepted = []
    threading.Thread(target=lambda: accepted.append(_accept(server)), daemon=True).start()
    code = fenced(
        f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=2)\ndef add(a, b):\n    return a + b"
    )
    passed, result = check_code(code, ADD_TESTS, limits=LIMITS)
    time.sleep(0.2)
    server.close()
    assert not passed
    assert result.isolation["network"] is True
    assert accepted in ([], [None])


def _accept(server):
    try:
        return server.accept()
    except OSError:
        return None


def test_isolation_report_and_concurrency():
    code = fenced("def add(a, b):\n    return a + b")
    start = time.perf_counter()
    rewards = code_reward([code] * 16, [ADD_TESTS] * 16, limits=LIMITS, max_workers=4)
    assert rewards == [1.0] * 16
    assert time.perf_counter() - start < 30
    passed, result = check_code(code, ADD_TESTS, limits=LIMITS)
    assert passed and set(result.isolation) == {"network", "private_tmp", "user"}
