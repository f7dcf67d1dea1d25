"""Pictures without a dashboard: a run's curves from its own log history, at the end of training and with
``poly-epo plot``; the demo's runs (several seeds per method) on one figure."""

import json
import os
import shutil
from pathlib import Path

import matplotlib.image
import pytest

from poly_epo_trl.commands import plot
from poly_epo_trl.commands.train import main as train
from poly_epo_trl.evaluation.curves import curve, log_history, panels_of, run_name

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """The CPU recipe for 4 steps, logged every step, with the held-out evaluation every 2."""
    out = tmp_path_factory.mktemp("curves") / "poly_epo-seed0"
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        flags = """--config recipes/tiny/poly_epo/config_cpu.yaml --max_steps 4 --logging_steps 1
            --per_device_train_batch_size 16 --eval_steps 2 --eval_dataset_name builtin:sum_pair
            --eval_max_problems 4 --eval_num_samples 4 --save_strategy steps --save_steps 2"""
        train([*flags.split(), "--output_dir", str(out)])
    finally:
        os.chdir(cwd)
    return out


def test_training_ends_with_its_curves_and_its_log_history(run_dir):
    history = log_history(run_dir)
    assert [step for step, _ in curve(history, "reward")] == [1, 2, 3, 4]
    titles = [title for title, _ in panels_of([history])]
    assert titles[:4] == ["reward", "distinct clusters per group", "set score", "judge fallback fraction"]
    assert titles[4] == "held-out pass@k" and len(titles) == 5
    per_k = [t for t, _ in panels_of([history], one_run=False)][4:]
    assert per_k == ["held-out pass@1", "held-out pass@2", "held-out pass@4"]
    image = matplotlib.image.imread(run_dir / "training_curves.png")
    assert image.shape[0] > 300 and image.shape[1] > 600 and image.std() > 0.01  # drawn, not blank


def test_plot_reads_a_stopped_run_from_its_newest_checkpoint(run_dir, tmp_path, capsys):
    stopped = tmp_path / "stopped"
    shutil.copytree(run_dir / "checkpoint-2", stopped / "checkpoint-2")
    assert [s for s, _ in curve(log_history(stopped), "reward")] == [1, 2]
    path = plot.main([str(stopped)])
    assert path == stopped / "training_curves.png" and path.exists()
    assert f"wrote {path}" in capsys.readouterr().out


def test_plot_groups_a_methods_seeds(run_dir, tmp_path):
    runs = []
    for name in ("poly_epo-seed0", "poly_epo-seed1", "grpo-seed0"):
        shutil.copytree(run_dir, tmp_path / name, ignore=shutil.ignore_patterns("*.safetensors", "checkpoint-*"))
        runs.append(tmp_path / name)
    state = json.loads((runs[1] / "trainer_state.json").read_text())
    for log in state["log_history"]:
        log["reward"] = log.get("reward", 0) + 1  # another seed, other numbers
    (runs[1] / "trainer_state.json").write_text(json.dumps(state))
    assert {run_name(r) for r in runs} == {"poly_epo", "grpo"}
    out = plot.main([*map(str, runs), "--out", str(tmp_path / "all.png")])
    assert out == tmp_path / "all.png" and matplotlib.image.imread(out).std() > 0.01


def test_plot_says_what_is_missing(tmp_path, capsys):
    with pytest.raises(SystemExit) as stop:
        plot.main([str(tmp_path)])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "no trainer_state.json there or in a checkpoint-*/ folder" in err and "Traceback" not in err


def test_an_agents_tool_calls_get_a_panel():
    history = [{"step": s, "reward": 0.1 * s, "tools/call_frequency": 1.0 - 0.1 * s} for s in (1, 2, 3)]
    assert [title for title, _ in panels_of([history])] == ["reward", "tool calls per episode"]
    assert curve(history, "tools/call_frequency") == [(1, 0.9), (2, 0.8), (3, 0.7)]
