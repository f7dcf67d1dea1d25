"""The verdict on TRL's own GRPOTrainer tests run against PolyEPOTrainer (the trl-suite tool's outputs, one file per
swap): every test that passes with GRPOTrainer must pass with PolyEPOTrainer, but those refused on purpose
(``normalize_then_sum``: docs/pages/development.md). Prints each run's last line and what regressed; exits 1 if
anything else regressed or a run did not finish."""

from __future__ import annotations

import re
import sys
from pathlib import Path

DOCUMENTED = ("normalize_then_sum",)  # refusals the development page documents
REGRESSED = re.compile(r"^Pass with GRPOTrainer, not with PolyEPOTrainer \((\d+)\):$")


def verdict(path: Path) -> list[str]:
    """The regressions of one run that are not documented refusals (or why the run has no verdict)."""
    lines = path.read_text().splitlines()
    final = [line for line in lines if line.startswith("TRL GRPO tests:")]
    if not final:
        return [f"{path.name}: the run did not finish (no 'TRL GRPO tests:' line)"]
    print(f"{path.stem}: {final[-1]}")
    unexpected, inside = [], False
    for line in lines:
        if REGRESSED.match(line):
            inside = True
        elif inside and line.startswith("  "):
            documented = any(word in line for word in DOCUMENTED)
            print(f"  {'documented refusal' if documented else 'REGRESSION'}: {line.strip()[:200]}")
            if not documented:
                unexpected.append(line.strip())
        elif inside:
            inside = False
    return unexpected


def main(paths: list[str]) -> int:
    problems = [problem for path in paths for problem in verdict(Path(path))]
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
