"""The packages whose installed version differs from the tested set (.ci/constraints.txt), one line each:
``transformers 5.24.0 (tested: 5.23.0)``; or a line saying there are none. Run with the environment's python."""

from __future__ import annotations

import re
import sys
from importlib.metadata import distributions
from pathlib import Path

PIN = re.compile(r"^([A-Za-z0-9_.\-]+)==([^\s;#]+)")


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def main(constraints: str = ".ci/constraints.txt") -> int:
    tested = {}
    for line in Path(constraints).read_text().splitlines():
        match = PIN.match(line.strip())
        if match:
            tested[canonical(match[1])] = match[2]
    installed = {canonical(d.metadata["Name"]): d.version for d in distributions()}
    differ = [
        f"{name} {version} (tested: {tested[name]})"
        for name, version in sorted(installed.items())
        if name in tested and version.split("+")[0] != tested[name].split("+")[0]
    ]
    print("versions that differ from the tested set:" if differ else "every tested package at its tested version")
    for line in differ:
        print(f"  {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
