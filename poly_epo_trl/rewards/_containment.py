"""What keeps a sandboxed run contained, beside bubblewrap's namespaces: per-run memory and process cgroups, and
killing every process a run left behind."""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import time
import warnings
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class SandboxLimits:
    """Limits of one sandboxed program."""

    timeout_seconds: float = 10.0
    cpu_seconds: int = 10
    memory_mb: int = 1024
    file_size_mb: int = 16
    tmp_size_mb: int = 64
    max_processes: int = 32
    max_output_bytes: int = 1 << 20

    def __post_init__(self) -> None:
        for name in ("timeout_seconds", "cpu_seconds", "memory_mb", "file_size_mb", "tmp_size_mb", "max_processes"):
            if not getattr(self, name) > 0:
                raise ValueError(f"SandboxLimits.{name} must be positive, got {getattr(self, name)}.")


class Cgroups:
    """Per-run memory and pids cgroups (v1 or v2), where this process may create them; else unavailable."""

    def __init__(self) -> None:
        self.version: str | None = None
        self.roots: dict[str, Path] = {}
        if os.geteuid() != 0:
            return
        own = {}
        with contextlib.suppress(OSError):
            for line in Path("/proc/self/cgroup").read_text().splitlines():
                _, controllers, path = line.split(":", 2)
                for name in controllers.split(",") if controllers else [""]:
                    own[name] = path.lstrip("/")
        base = Path("/sys/fs/cgroup")
        tag = f"poly_epo_sandbox_{os.getpid()}"
        v1 = {name: base / name / own.get(name, "") / tag for name in ("memory", "pids")}
        if all((base / name / "cgroup.procs").exists() for name in v1):
            self._try("v1", v1)
        elif (base / "cgroup.controllers").exists():
            self._try("v2", {"unified": base / own.get("", "") / tag})

    def _try(self, version: str, roots: dict[str, Path]) -> None:
        try:
            for root in roots.values():
                root.mkdir(exist_ok=True)
            if version == "v2":
                (roots["unified"] / "cgroup.subtree_control").write_text("+memory +pids")
            self.version, self.roots = version, roots
        except OSError:
            for root in roots.values():
                with contextlib.suppress(OSError):
                    root.rmdir()

    def create(self, run: str, limits: SandboxLimits) -> list[Path]:
        memory = str(limits.memory_mb * 2**20)
        dirs = []
        for name, root in self.roots.items():
            folder = root / run
            folder.mkdir()
            dirs.append(folder)
            if self.version == "v2":
                (folder / "memory.max").write_text(memory)
                (folder / "memory.swap.max").write_text("0")
                (folder / "pids.max").write_text(str(limits.max_processes))
            elif name == "memory":
                (folder / "memory.limit_in_bytes").write_text(memory)
                with contextlib.suppress(OSError):
                    (folder / "memory.memsw.limit_in_bytes").write_text(memory)
            else:
                (folder / "pids.max").write_text(str(limits.max_processes))
        return dirs

    def oom_kills(self, dirs: list[Path]) -> int:
        for folder in dirs:
            for name in ("memory.oom_control", "memory.events"):
                with contextlib.suppress(OSError):
                    for line in (folder / name).read_text().splitlines():
                        if line.startswith("oom_kill "):
                            return int(line.split()[1])
        return 0

    def remove(self, dirs: list[Path]) -> None:
        """Kill whatever is left in the run's cgroups and delete them."""

        def members() -> set[int]:
            pids = set()
            for folder in dirs:
                with contextlib.suppress(OSError):
                    pids.update(int(p) for p in (folder / "cgroup.procs").read_text().split())
            return pids

        kill_until_gone(members, rounds=200)
        for folder in dirs:
            with contextlib.suppress(OSError):
                folder.rmdir()

    def close(self) -> None:
        for root in self.roots.values():
            with contextlib.suppress(OSError):
                root.rmdir()


@functools.lru_cache(maxsize=1)
def shared_cgroups() -> Cgroups:
    cgroups = Cgroups()
    if not cgroups.version:
        warnings.warn(
            "The code sandbox cannot create cgroups here (not root, or the cgroup hierarchy is read-only), so its "
            "memory and process limits apply per process (RLIMIT_AS, RLIMIT_NPROC), not to the whole program. "
            "Run as root, or delegate a cgroup, for whole-program limits.",
            RuntimeWarning,
            stacklevel=3,
        )
    else:
        import atexit

        atexit.register(cgroups.close)
    return cgroups


def processes_of_current_user() -> int:
    uid = os.getuid()
    count = 0
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError):
                count += os.stat(f"/proc/{entry}").st_uid == uid
    return count


def kill_uid(uid: int) -> None:
    """SIGKILL every process the throwaway uid still has (none, normally: the PID namespace died with bwrap)."""

    def members() -> list[int]:
        pids = []
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                with contextlib.suppress(OSError):
                    if os.stat(f"/proc/{entry}").st_uid == uid and is_running(entry):
                        pids.append(int(entry))
        return pids

    kill_until_gone(members, rounds=100)


def kill_until_gone(members, rounds: int) -> None:
    """SIGKILL ``members()`` until it is empty, at most ``rounds`` times, 5 ms apart."""
    for _ in range(rounds):
        pids = members()
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.005)


def is_running(pid: str) -> bool:
    """False for zombies: killed processes waiting for their parent to reap them."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False
