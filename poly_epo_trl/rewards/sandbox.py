"""Run untrusted Python in a throwaway sandbox: own directory, resource limits, no secrets, no network.

Each run gets a fresh temporary directory and a new session, and starts through ``_sandbox_boot.py``, which sets
CPU-time, address-space, file-size, open-file and process-count limits and, where the OS allows it (root here), a
network namespace with no interfaces, a private mount namespace whose shared writable directories (/tmp, /var/tmp,
/dev/shm, /run/lock) are the run's own directory, and a throwaway user id, so that the process-count limit and the
final kill cover exactly the run's processes. The environment is built from scratch: no API keys, no tokens. The
caller enforces a wall-clock timeout and an output cap, then kills everything the run started and deletes its
directory. ``SandboxResult.isolation`` says which of the OS-level steps took effect.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

BOOT = Path(__file__).with_name("_sandbox_boot.py")
_UID_BASE = 200_000
_PREFIX = os.path.realpath(sys.base_prefix)


@dataclass(frozen=True)
class SandboxLimits:
    """Limits of one sandboxed run."""

    timeout_seconds: float = 10.0
    cpu_seconds: int = 10
    memory_mb: int = 1024
    file_size_mb: int = 16
    max_processes: int = 16
    max_output_bytes: int = 1 << 20

    def __post_init__(self) -> None:
        for name in ("timeout_seconds", "cpu_seconds", "memory_mb", "file_size_mb", "max_processes"):
            if getattr(self, name) <= 0:
                raise ValueError(f"SandboxLimits.{name} must be positive, got {getattr(self, name)}.")


@dataclass
class SandboxResult:
    returncode: int | None
    stdout: str
    stderr: str
    timed_out: bool = False
    output_exceeded: bool = False
    seconds: float = 0.0
    isolation: dict[str, object] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out and not self.output_exceeded


class _UidCounter:
    """Throwaway user ids for this process's runs: 256 in rotation, so concurrent runs never signal each other and
    a uid is reused only long after its processes are gone."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._next = 0

    def take(self) -> int:
        with self._lock:
            self._next = (self._next + 1) % 256
            return _UID_BASE + (os.getpid() % 100_000) * 256 + self._next


_UIDS = _UidCounter()


def _is_running(pid: str) -> bool:
    """False for zombies: killed processes waiting for their (possibly gone) parent to reap them."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def _processes_of(uid: int) -> list[int]:
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.stat(f"/proc/{entry}").st_uid == uid and _is_running(entry):
                    pids.append(int(entry))
            except OSError:
                continue
    return pids


def _kill_all(process: subprocess.Popen, uid: int | None) -> None:
    """SIGKILL the run's process group and, with a throwaway uid, every process of that uid (fork bombs included)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    if uid is None:
        return
    for _ in range(100):
        pids = _processes_of(uid)
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.01)


def _drain(stream, cap: int, sink: list[bytes], overflow: threading.Event) -> None:
    total = 0
    while chunk := stream.read1(65536):
        total += len(chunk)
        if total > cap:
            overflow.set()
            return
        sink.append(chunk)


def run_python(
    files: dict[str, str],
    argv: list[str],
    stdin: str = "",
    limits: SandboxLimits | None = None,
) -> SandboxResult:
    """Write ``files`` into a fresh directory and run ``python -I -B *argv`` there under ``limits``."""
    limits = limits or SandboxLimits()
    workdir = Path(tempfile.mkdtemp(prefix="poly_epo_sandbox_"))
    uid = _UIDS.take() if os.geteuid() == 0 else None
    try:
        for name, text in files.items():
            (workdir / name).write_text(text)
        if uid is not None:
            for path in [workdir, *workdir.iterdir()]:
                os.chown(path, uid, uid)
        read_status, write_status = os.pipe()
        env = {"PATH": "/usr/bin:/bin", "HOME": str(workdir), "TMPDIR": str(workdir), "LANG": "C.UTF-8"}
        config = {
            "workdir": str(workdir),
            "argv": argv,
            "env": env,
            "uid": uid,
            "python_prefix": _PREFIX,
            "python_executable": os.path.relpath(os.path.realpath(sys.executable), _PREFIX),
            "status_fd": write_status,
            "limits": {
                "cpu_seconds": limits.cpu_seconds,
                "memory_mb": limits.memory_mb,
                "file_size_mb": limits.file_size_mb,
                "max_processes": limits.max_processes,
            },
        }
        start = time.perf_counter()
        process = subprocess.Popen(
            [sys.executable, "-I", "-B", str(BOOT), json.dumps(config)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=workdir,
            start_new_session=True,
            pass_fds=(write_status,),
        )
        os.close(write_status)
        out: list[bytes] = []
        err: list[bytes] = []
        overflow = threading.Event()
        readers = [
            threading.Thread(target=_drain, args=(process.stdout, limits.max_output_bytes, out, overflow)),
            threading.Thread(target=_drain, args=(process.stderr, limits.max_output_bytes, err, overflow)),
        ]
        for reader in readers:
            reader.daemon = True
            reader.start()
        threading.Thread(target=_feed, args=(process.stdin, stdin.encode()), daemon=True).start()
        timed_out = False
        deadline = start + limits.timeout_seconds
        while process.poll() is None and not overflow.is_set():
            if time.perf_counter() > deadline:
                timed_out = True
                break
            time.sleep(0.005)
        _kill_all(process, uid)
        process.wait()
        for reader in readers:
            reader.join(timeout=1.0)
        with os.fdopen(read_status, "rb") as status:
            report = status.read()
        isolation = json.loads(report) if report else {"boot": "failed"}
        _warn_once_if_weak(isolation)
        return SandboxResult(
            returncode=None if timed_out or overflow.is_set() else process.returncode,
            stdout=b"".join(out).decode(errors="replace"),
            stderr=b"".join(err).decode(errors="replace"),
            timed_out=timed_out,
            output_exceeded=overflow.is_set(),
            seconds=time.perf_counter() - start,
            isolation=isolation,
        )
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


_WARNED = threading.Event()


def _warn_once_if_weak(isolation: dict[str, object]) -> None:
    if not _WARNED.is_set() and not (isolation.get("network") and isolation.get("private_tmp")):
        _WARNED.set()
        warnings.warn(
            f"The code sandbox runs with partial isolation here ({isolation}): without root (or with namespaces "
            "forbidden) it cannot cut the network, hide /tmp or switch to a throwaway user, so a program can reach "
            "the network and signal or read your own processes. Resource limits, the timeout, the clean environment "
            "and the temporary directory still apply. Run untrusted code as root in a container for full isolation.",
            RuntimeWarning,
            stacklevel=3,
        )


def _feed(pipe, data: bytes) -> None:
    try:
        pipe.write(data)
        pipe.close()
    except (BrokenPipeError, OSError):
        pass
