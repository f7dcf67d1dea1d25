"""First program of a sandboxed run: isolate this process as far as the OS allows, then exec the untrusted program.

Runs as ``python -I -B _sandbox_boot.py <config json>`` in a fresh, single-threaded interpreter (stdlib only), so
nothing here races with the trainer's threads. It reports which isolation steps succeeded on ``status_fd`` and
closes it before the exec, so the untrusted program can neither read nor forge that report.
"""

import ctypes
import json
import os
import resource
import sys

CLONE_NEWNS = 0x00020000
CLONE_NEWNET = 0x40000000
MS_REC = 0x4000
MS_PRIVATE = 0x40000
MS_BIND = 0x1000
SHARED_WRITABLE_DIRS = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock")


def main() -> None:
    config = json.loads(sys.argv[1])
    report = {"network": False, "private_tmp": False, "user": "inherited"}
    libc = ctypes.CDLL(None, use_errno=True)
    os.chdir(config["workdir"])
    if os.geteuid() == 0:
        report["network"] = libc.unshare(CLONE_NEWNET) == 0
        if libc.unshare(CLONE_NEWNS) == 0 and libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None) == 0:
            # "." is the run's directory (the cwd), still reachable after /tmp itself is covered.
            mounted = [
                libc.mount(b".", d.encode(), None, MS_BIND, None) == 0
                for d in SHARED_WRITABLE_DIRS
                if os.path.isdir(d)
            ]
            report["private_tmp"] = all(mounted)
    executable = sys.executable
    uid = config.get("uid")
    if uid is not None and report["private_tmp"]:
        # The interpreter may sit where the throwaway user cannot read it (pyenv under /root): show it the base
        # installation through a bind mount inside the run's own /tmp.
        os.mkdir(".python")
        if libc.mount(config["python_prefix"].encode(), b"/tmp/.python", None, MS_BIND, None) == 0:
            executable = os.path.join("/tmp/.python", config["python_executable"])
            os.chdir("/tmp")
        else:
            uid = None
    elif uid is not None:
        uid = None
    limits = config["limits"]
    resource.setrlimit(resource.RLIMIT_CPU, (limits["cpu_seconds"], limits["cpu_seconds"] + 1))
    memory = limits["memory_mb"] * 2**20
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    file_size = limits["file_size_mb"] * 2**20
    resource.setrlimit(resource.RLIMIT_FSIZE, (file_size, file_size))
    resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if uid is not None:
        resource.setrlimit(resource.RLIMIT_NPROC, (limits["max_processes"], limits["max_processes"]))
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
        report["user"] = f"uid {uid}"
    else:
        # RLIMIT_NPROC counts every process of the user: allow what already runs plus the sandbox's share.
        running = sum(1 for p in os.listdir("/proc") if p.isdigit() and _owned_by_me(p))
        cap = running + limits["max_processes"]
        resource.setrlimit(resource.RLIMIT_NPROC, (cap, cap))
    status_fd = config["status_fd"]
    os.write(status_fd, json.dumps(report).encode())
    os.close(status_fd)
    os.execve(executable, [executable, "-I", "-B", *config["argv"]], config["env"])


def _owned_by_me(pid: str) -> bool:
    try:
        return os.stat(f"/proc/{pid}").st_uid == os.getuid()
    except OSError:
        return False


if __name__ == "__main__":
    main()
