"""The methods' side-by-side benchmark (``benchmarks/methods.py``): its results file holds what a reader needs to
recompute every number, the committed page and README row are what the committed file gives, and the command runs
end to end at a tiny size."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import methods as benchmark  # noqa: E402

from poly_epo_trl.methods import METHODS  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
PACKAGE_METHODS = {  # the package's registered methods (not those other tests register in this process)
    name
    for name in METHODS.names()
    if getattr(METHODS.get(name).fn, "__module__", "poly_epo_trl.").startswith("poly_epo_trl.")
}
PAGE = ROOT / "docs" / "pages" / "methods.md"


def block(text: str, task: str = "prime_pair") -> str:
    start, end = benchmark.markers(task)
    return text.split(start, 1)[1].split(end, 1)[0].strip("\n")


def check_shape(report: dict) -> None:
    """What the results file holds, as a reader reads it."""
    ks = report["ks"]
    for method, by_seed in report["runs"].items():
        for run in by_seed.values():
            assert all("correct_answer_counts" in p for p in run["final"]["problems"]), method
            assert run["train_seconds"] > 0 and all("eval_pass@1" in point for point in run["curve"])
    for method, s in report["summary"].items():
        assert all(len(s["pass_at_k"][name]) == len(ks) for name in ("mean", "low", "high")), method
        for key in ("pcmd", "effective_modes", "distinct_correct_clusters", "pass@1", "mean_reward"):
            if s[key] is not None:  # PCMD: none where no problem has two correct samples in every seed
                assert s[key]["low"] <= s[key]["mean"] <= s[key]["high"], (method, key)
    for method, diff in report["versus_grpo"].items():
        assert len(diff["pass_at_k"]["mean"]) == len(ks)
        assert {"pcmd", "pass@1", "mean reward"} <= set(diff), method
    assert report["seconds"] > 0


@pytest.mark.parametrize("task", benchmark.TOY_TASKS)
def test_the_pages_table_is_drawn_from_the_committed_results(task):
    """Each task's block between the methods page's markers is exactly the page of the committed file's records,
    every statistic computed again with this library; every registered method ran, on 5 seeds, in 20 minutes or
    less; the page says, from the paired interval, where Poly-EPO's mean reward stands against Dr.GRPO's."""
    committed = json.loads((RESULTS / f"methods_{task}.json").read_text())
    report = benchmark.recomputed(committed)
    check_shape(report)
    for key in ("summary", "versus_grpo", "ks"):
        assert json.loads(json.dumps(report[key])) == committed[key], key
    assert block(PAGE.read_text(), task) == benchmark.page(report)
    assert set(report["runs"]) == PACKAGE_METHODS and report["settings"]["seeds"] == [0, 1, 2, 3, 4]
    assert report["seconds"] <= 20 * 60
    diff = report["versus_grpo"]["poly_epo"]["mean reward"]
    verdict = "below" if diff["high"] < 0 else "above" if diff["low"] > 0 else "not told apart from"
    assert "- `poly_epo` against Dr.GRPO: pass@1" in benchmark.page(report)
    assert f"mean reward {verdict} Dr.GRPO's ({benchmark.cell(diff, 3)})" in benchmark.page(report)


def test_the_readme_quotes_the_committed_prime_pair_results():
    report = benchmark.recomputed(json.loads((RESULTS / "methods_prime_pair.json").read_text()))
    readme = (ROOT / "README.md").read_text()
    row = next(line for line in readme.splitlines() if line.startswith("| exploration methods"))
    summary, n = report["summary"], report["ks"][-1]
    for method in ("poly_epo", "grpo"):
        assert benchmark.cell(summary[method]["pass_at_k"], 3, -1) in row, method
        assert benchmark.cell(summary[method]["pcmd"], 3) in row, method
    assert f"pass@{n}" in row


@pytest.mark.slow
def test_the_benchmark_runs_at_a_tiny_size_and_redraws_from_its_file(tmp_path):
    """Three methods, one seed, a few steps: results.json, the figure and a page block; --results redraws the same
    block from the file, running nothing."""
    page = tmp_path / "page.md"
    start, end = benchmark.markers("prime_pair")
    page.write_text(f"before\n{start}\n{end}\nafter\n")
    argv = ["--seeds", "0", "--methods", "grpo", "poly_epo", "ucpo", "--steps", "3", "--eval-samples", "4"]
    command = [sys.executable, str(ROOT / "benchmarks" / "methods.py"), *argv, "--out", str(tmp_path / "run")]
    done = subprocess.run([*command, "--page", str(page)], capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads((tmp_path / "run" / "results.json").read_text())
    check_shape(report)
    assert set(report["runs"]) == {"grpo", "poly_epo", "ucpo"} and set(report["versus_grpo"]) == {"poly_epo", "ucpo"}
    assert (tmp_path / "run" / benchmark.figure_name("prime_pair")).stat().st_size > 10_000
    assert (tmp_path / "run" / "page.md").read_text().startswith("`python benchmarks/methods.py --task prime_pair")
    drawn = block(page.read_text())
    again = tmp_path / "again.md"
    again.write_text(f"{start}\n{end}\n")
    script, results = str(ROOT / "benchmarks" / "methods.py"), str(tmp_path / "run" / "results.json")
    redone = subprocess.run(
        [sys.executable, script, "--results", results, "--out", str(tmp_path / "redrawn"), "--page", str(again)],
        capture_output=True, text=True, cwd=ROOT, timeout=300,
    )  # fmt: skip
    assert redone.returncode == 0, redone.stderr[-3000:]
    assert block(again.read_text()) == drawn
