"""Run untrusted Python under bubblewrap: the program computes, the caller decides.

Programs run with a fixed hash seed (``PYTHONHASHSEED=0``), so a verdict does not change from run to run.

``isolation="bwrap"`` (the default) runs every program through `bubblewrap <https://github.com/containers/bubblewrap>`_
(``bwrap``, Debian package ``bubblewrap``), the sandbox Flatpak uses:

- new PID, network, IPC, UTS and cgroup namespaces: the program sees only its own processes, has no network (not
  even loopback) and no host sockets;
- a minimal read-only filesystem: the shared libraries and the Python runtime (its site-packages hidden), a fresh
  ``/proc`` and ``/dev``, and a private ``/tmp`` tmpfs of ``tmp_size_mb``; nothing of the host's home, caches or
  datasets;
- an empty environment; as root, a throwaway user id per run (so it can signal nothing else);
- limits for the whole program where the cgroup hierarchy is writable (root): memory (``memory_mb``, tmpfs
  included) and process count (``max_processes``); otherwise per process (``RLIMIT_AS``, ``RLIMIT_NPROC``), said in
  a warning. Per process always: CPU seconds, file size, open files, no core dumps. A wall-clock timeout and an
  output cap; afterwards everything the run started is killed.

``isolation="rlimits"`` is the weaker mode for machines where bubblewrap cannot run (no user namespaces): resource
limits, a clean environment and a throwaway directory only; the program can read your files and use the network.
It must be asked for; ``bwrap`` never falls back to it silently.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import itertools
import os
import selectors
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from ._containment import SandboxLimits, kill_uid, processes_of_current_user, shared_cgroups

HARNESS = Path(__file__).with_name("_harness.py")
ISOLATION_MODES = ("bwrap", "rlimits")
_UID_BASE = 200_000
_SANDBOX_HARNESS = "/sandbox/harness.py"
_SANDBOX_PACKAGES = "/sandbox/packages"
# Third-party packages solutions import (LeetCode's judge provides them); shown read-only when installed here.
DEFAULT_PACKAGES = ("sortedcontainers", "numpy")
# A fixed string-hash seed: a program whose answer depends on set order gets the same verdict every time.
HASH_SEED = ("PYTHONHASHSEED", "0")
_RUN_IDS = itertools.count()


class SandboxUnavailable(RuntimeError):
    """The requested isolation cannot run on this machine; the message names the cause and the fix."""


@dataclass
class SandboxResult:
    returncode: int | None
    stdout: bytes
    stderr: bytes
    timed_out: bool = False
    output_exceeded: bool = False
    memory_exceeded: bool = False
    seconds: float = 0.0
    isolation: dict[str, object] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not (self.timed_out or self.output_exceeded or self.memory_exceeded)


def _python() -> tuple[str, str]:
    """(the real interpreter binary, the base installation prefix it lives in)."""
    return os.path.realpath(sys.executable), os.path.realpath(sys.base_prefix)


def _hidden_package_dirs(prefix: str) -> list[str]:
    """Installed-package folders inside the bound runtime: covered by empty tmpfs mounts in the sandbox."""
    paths = sysconfig.get_paths(vars={"base": prefix, "platbase": prefix, "installed_base": prefix})
    found = {os.path.realpath(paths[key]) for key in ("purelib", "platlib")}
    found.add("/usr/lib/python3/dist-packages")
    return sorted(p for p in found if os.path.isdir(p))


def _ancestors(path: str) -> list[str]:
    parts = Path(path).parts[1:-1]
    return ["/" + "/".join(parts[: i + 1]) for i in range(len(parts))]


def package_paths(names: tuple[str, ...]) -> dict[str, str]:
    """{name: installed folder or module file} for the importable ones among ``names``."""
    found = {}
    for name in names:
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.origin:
            locations = list(spec.submodule_search_locations or [])
            found[name] = locations[0] if locations else spec.origin
    return found


@functools.lru_cache(maxsize=8)
def _bwrap_mounts(packages: tuple[str, ...]) -> tuple[str, ...]:
    """The read-only view: shared libraries, the Python runtime without its packages, /proc, /dev, the harness, and
    the named packages under /sandbox/packages."""
    executable, prefix = _python()
    args: list[str] = []
    binds = [d for d in ("/usr/lib", "/usr/lib64", "/usr/lib32", "/lib", "/lib64", "/lib32") if os.path.exists(d)]
    if not executable.startswith(prefix + "/"):
        binds.append(executable)
    setpriv = shutil.which("setpriv")
    if os.geteuid() == 0 and setpriv:
        binds.append(os.path.realpath(setpriv))
    if not any(prefix == b or prefix.startswith(b + "/") for b in binds):
        binds.append(prefix)
    # bwrap copies the host's permissions onto the folders it creates for mount points (/root is 0700): make them
    # traversable, so that the throwaway user can reach the runtime.
    folders = {a for b in binds if not os.path.islink(b) for a in _ancestors(b)}
    for folder in sorted(folders | {"/sandbox", _SANDBOX_PACKAGES}):
        args += ["--perms", "0755", "--dir", folder]
    for path in binds:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        else:
            args += ["--ro-bind", path, path]
    for hidden in _hidden_package_dirs(prefix):
        args += ["--tmpfs", hidden]
    args += ["--ro-bind", str(HARNESS), _SANDBOX_HARNESS, "--proc", "/proc", "--dev", "/dev"]
    for path in package_paths(packages).values():
        args += ["--ro-bind", path, f"{_SANDBOX_PACKAGES}/{os.path.basename(path)}"]
        libs = f"{path}.libs"  # the shared libraries a wheel vendors (numpy.libs)
        if os.path.isdir(libs):
            args += ["--ro-bind", libs, f"{_SANDBOX_PACKAGES}/{os.path.basename(libs)}"]
    return tuple(args)


def _command(
    limits: SandboxLimits,
    isolation: str,
    uid: int | None,
    cgroup_dirs: list[Path],
    program: list[str],
    packages: tuple[str, ...] = (),
) -> list[str]:
    """The argv of one run: [enter the cgroups] prlimit ... [bwrap ... [setpriv ...]] python -I -S -B program."""
    prlimit = [
        "prlimit",
        f"--cpu={limits.cpu_seconds}:{limits.cpu_seconds + 1}",
        f"--fsize={limits.file_size_mb * 2**20}",
        "--nofile=256",
        "--core=0",
    ]
    if not cgroup_dirs:
        prlimit.append(f"--as={limits.memory_mb * 2**20}")
        # Without a throwaway uid RLIMIT_NPROC counts every process of this user: allow what runs already.
        running = 0 if uid is not None else processes_of_current_user()
        prlimit.append(f"--nproc={running + limits.max_processes}")
    prlimit.append("--")
    enter = []
    if cgroup_dirs:
        enter = [
            "sh",
            "-c",
            'while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift; exec "$@"',
            "sh",
            *(str(d / "cgroup.procs") for d in cgroup_dirs),
            "--",
        ]
    # Not -I: it implies -E, which would ignore PYTHONHASHSEED; the environment is built from scratch anyway.
    python = [_python()[0], "-s", "-S", "-B", *program]
    if isolation == "rlimits":
        return [*enter, *prlimit, *python]
    namespaces = ["--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
    user = ["--unshare-user"]
    if uid is not None:
        user = ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
        python = [shutil.which("setpriv") or "setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", *python]
    return [
        *enter,
        *prlimit,
        "bwrap",
        *namespaces,
        *user,
        "--die-with-parent",
        "--new-session",
        *_bwrap_mounts(packages),
        *("--size", str(limits.tmp_size_mb * 2**20), "--perms", "1777", "--tmpfs", "/tmp", "--chdir", "/tmp"),
        *("--clearenv", "--setenv", "HOME", "/tmp", "--setenv", "LANG", "C.UTF-8", "--setenv", *HASH_SEED),
        *python,
    ]


def _throwaway_uid(run: int) -> int | None:
    """As root (with setpriv), a user id of its own for each of this process's concurrent runs."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        return None
    return _UID_BASE + (os.getpid() % 10_000) * 100 + run % 100


class Sandbox:
    """Runs ``python -I -S -B harness.py`` on a job given on stdin, isolated as ``isolation`` says."""

    def __init__(
        self,
        limits: SandboxLimits | None = None,
        isolation: str = "bwrap",
        packages: tuple[str, ...] = DEFAULT_PACKAGES,
    ) -> None:
        if isolation not in ISOLATION_MODES:
            raise ValueError(f"isolation={isolation!r}: use one of {ISOLATION_MODES}.")
        self.limits = limits or SandboxLimits()
        self.isolation = isolation
        self.packages = tuple(packages)
        paths = package_paths(self.packages)
        # Where the harness finds the packages: their bind mounts, or (weaker mode) their installed parent folders.
        self.python_path = (
            [_SANDBOX_PACKAGES] if isolation == "bwrap" else sorted({os.path.dirname(p) for p in paths.values()})
        )
        if isolation == "bwrap":
            check_bwrap()
        self._cgroups = shared_cgroups() if isolation == "bwrap" else None

    def describe(self) -> dict[str, object]:
        """What isolation is in effect."""
        if self.isolation == "rlimits":
            return {"mode": "rlimits", "namespaces": False, "limits": "per process"}
        version = self._cgroups.version
        return {
            "mode": "bwrap",
            "namespaces": True,
            "user": "throwaway uid" if _throwaway_uid(0) is not None else "own uid in a user namespace",
            "limits": f"whole program (cgroup {version})" if version else "per process",
        }

    def run(self, stdin: bytes) -> SandboxResult:
        """One program: the harness reads its job (and the program's own input) from ``stdin``."""
        limits = self.limits
        run = next(_RUN_IDS)
        uid = _throwaway_uid(run) if self.isolation == "bwrap" else None
        cgroup_dirs = self._cgroups.create(f"r{run}", limits) if self._cgroups and self._cgroups.version else []
        workdir = tempfile.mkdtemp(prefix="poly_epo_sandbox_") if self.isolation == "rlimits" else "/"
        env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": workdir, HASH_SEED[0]: HASH_SEED[1]}
        # In the weaker mode, -c keeps the harness's folder (which holds rewards/math.py) off sys.path.
        bootstrap = f"exec(compile(open({str(HARNESS)!r}).read(), {str(HARNESS)!r}, 'exec'))"
        program = ["-c", bootstrap] if self.isolation == "rlimits" else [_SANDBOX_HARNESS]
        start = time.perf_counter()
        try:
            with subprocess.Popen(
                _command(limits, self.isolation, uid, cgroup_dirs, program, self.packages),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=env,
                cwd=workdir,
                start_new_session=True,
            ) as process:
                out, err, timed_out, overflow = _communicate(process, stdin, limits)
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(process.pid, signal.SIGKILL)
            oom = bool(cgroup_dirs) and self._cgroups.oom_kills(cgroup_dirs) > 0
        finally:
            if cgroup_dirs:
                self._cgroups.remove(cgroup_dirs)
            elif uid is not None:
                kill_uid(uid)
            if self.isolation == "rlimits":
                shutil.rmtree(workdir, ignore_errors=True)
        stopped = timed_out or overflow
        return SandboxResult(
            returncode=None if stopped else process.returncode,
            stdout=out,
            stderr=err,
            timed_out=timed_out,
            output_exceeded=overflow,
            memory_exceeded=oom,
            seconds=time.perf_counter() - start,
            isolation=self.describe(),
        )


@functools.lru_cache(maxsize=1)
def check_bwrap() -> None:
    """Raise SandboxUnavailable, naming the cause and the fix, when bubblewrap cannot run a program here."""
    if shutil.which("bwrap") is None or shutil.which("prlimit") is None:
        missing = "bwrap (Debian/Ubuntu package bubblewrap)" if shutil.which("bwrap") is None else "prlimit"
        raise SandboxUnavailable(
            f"The code sandbox needs {missing}, which is not installed: `apt-get install bubblewrap util-linux` "
            "(as root; `make sandbox-tools` does this). Or set code_sandbox: rlimits to accept the weaker mode (no "
            "namespaces: the program can read your files and reach the network)."
        )
    command = _command(SandboxLimits(), "bwrap", _throwaway_uid(99), [], ["-c", "pass"])
    result = subprocess.run(command, capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"}, cwd="/")
    if result.returncode != 0:
        raise SandboxUnavailable(
            f"bubblewrap cannot create a sandbox on this machine: {result.stderr.strip()[:300]!r}. It needs user "
            "namespaces (sysctl kernel.unprivileged_userns_clone=1, or run as root; in Docker, "
            "--security-opt seccomp=unconfined). Or set code_sandbox: rlimits to accept the weaker mode (no "
            "namespaces: the program can read your files and reach the network)."
        )


def _communicate(process: subprocess.Popen, stdin: bytes, limits: SandboxLimits) -> tuple[bytes, bytes, bool, bool]:
    """Feed stdin and read stdout/stderr in one loop until both close, the deadline passes or the output cap is hit:
    (stdout, stderr, timed out, output exceeded)."""
    deadline = time.perf_counter() + limits.timeout_seconds
    chunks: dict[int, list[bytes]] = {process.stdout.fileno(): [], process.stderr.fileno(): []}
    total, view, stdin_fd = 0, memoryview(stdin), process.stdin.fileno()
    with selectors.DefaultSelector() as selector:
        for fd in chunks:
            selector.register(fd, selectors.EVENT_READ)
        if view:
            os.set_blocking(stdin_fd, False)
            selector.register(stdin_fd, selectors.EVENT_WRITE)
        else:
            process.stdin.close()
        while selector.get_map():
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                return (
                    b"".join(chunks[process.stdout.fileno()]),
                    b"".join(chunks[process.stderr.fileno()]),
                    True,
                    False,
                )
            for key, _ in selector.select(remaining):
                fd = key.fd
                if fd == stdin_fd:
                    try:
                        view = view[os.write(fd, view[:65536]) :]
                    except (BrokenPipeError, BlockingIOError, OSError):
                        view = view[:0]
                    if not view:
                        selector.unregister(fd)
                        process.stdin.close()
                    continue
                data = os.read(fd, 65536)
                if not data:
                    selector.unregister(fd)
                    continue
                total += len(data)
                if total > limits.max_output_bytes:
                    return (
                        b"".join(chunks[process.stdout.fileno()]),
                        b"".join(chunks[process.stderr.fileno()]),
                        False,
                        True,
                    )
                chunks[fd].append(data)
    return b"".join(chunks[process.stdout.fileno()]), b"".join(chunks[process.stderr.fileno()]), False, False


__all__ = ["ISOLATION_MODES", "Sandbox", "SandboxLimits", "SandboxResult", "SandboxUnavailable", "check_bwrap"]
