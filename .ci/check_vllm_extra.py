"""CI: `pip install "poly_epo_trl[vllm]"` (the GPU extra) resolves to the vLLM setup.cfg pins, next to the package's
own TRL and transformers ranges. A dry run in a throwaway environment: nothing is installed."""

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from packaging.requirements import Requirement
from packaging.version import Version

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, "-m", "venv", f"{tmp}/venv"], check=True)
        report = Path(tmp) / "report.json"
        pip = [f"{tmp}/venv/bin/python", "-m", "pip", "install", "--dry-run", "--quiet", "--ignore-installed"]
        subprocess.run([*pip, "--report", str(report), f"{ROOT}[vllm]"], check=True, stderr=subprocess.DEVNULL)
        chosen = {
            i["metadata"]["name"].lower(): i["metadata"]["version"] for i in json.loads(report.read_text())["install"]
        }
    print(
        "pip install '.[vllm]' resolves to:",
        {k: chosen.get(k) for k in ("vllm", "transformers", "trl", "torch", "numpy")},
    )
    wanted = {
        "vllm": Requirement("vllm==0.30.0"),
        "trl": Requirement("trl>=1.16,<1.17"),
        "transformers": Requirement("transformers>=5.23"),
    }
    wrong = [f"{name} {chosen.get(name)} (wanted {req})" for name, req in wanted.items()
             if name not in chosen or not req.specifier.contains(Version(chosen[name]))]  # fmt: skip
    if wrong:
        raise SystemExit(f"the vllm extra does not resolve as tested: {', '.join(wrong)}")


if __name__ == "__main__":
    main()
