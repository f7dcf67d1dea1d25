"""The judge in the loggers, for real: the CPU recipe with `report_to: wandb` (offline) and `report_to: trackio`
(local), read back from what each wrote: the completions table has the judge's columns with the values the judge
returned (the run's audit trail is the independent record of them), and the `poly_epo/*` curves are there."""

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from poly_epo_trl.judges.audit import read_audit
from poly_epo_trl.trainer.verdicts import JUDGE_COLUMNS

ROOT = Path(__file__).resolve().parents[1]
STEPS = 2
CURVES = {"train/poly_epo/set_score", "train/poly_epo/distinct_clusters", "train/judge/fallback_frac"}


def train(report_to: str, tmp_path: Path, **env: str) -> Path:
    out = tmp_path / "run"
    flags = f"""--config recipes/tiny/poly_epo/config_cpu.yaml --max_steps {STEPS} --logging_steps 1
        --per_device_train_batch_size 16 --log_completions true --judge answer:text --report_to {report_to}"""
    done = subprocess.run(
        [sys.executable, "-m", "poly_epo_trl.train", *flags.split(), "--output_dir", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", **env},
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return out


def judged_rows(out: Path, step: int) -> dict[str, list]:
    """What the judge returned for a step's groups, row by row, from the run's audit trail."""
    records = [r for r in read_audit(out) if r["step"] == step and r["mode"] == "train"]
    return {
        "cluster": [c for r in records for c in r["cluster_ids"]],
        "strategy": [s or "" for r in records for s in r["strategies"]],
        "judge": [r["judge"] for r in records for _ in r["cluster_ids"]],
    }


def assert_judge_columns(columns: list[str], rows: list[list], expected: dict[str, list]) -> None:
    assert set(JUDGE_COLUMNS) <= set(columns), columns
    table = {name: [row[columns.index(name)] for row in rows] for name in columns}
    for name, values in expected.items():
        assert table[name] == values, name
    assert set(table["fallback"]) == {""}
    assert all(s.startswith("answer ") for c, s in zip(table["cluster"], table["strategy"], strict=True) if c != 100)


def wandb_history(path: Path) -> list[dict[str, str]]:
    """The history rows of an offline wandb run's ``run-*.wandb`` (LevelDB's log format: 32 KiB blocks of records,
    each with a 7-byte header, a record split over blocks in FIRST/MIDDLE/LAST parts; after wandb's 7-byte file
    header), each as {key: value_json}. wandb 0.31 ships no reader of its own for these files."""
    from wandb.proto import wandb_internal_pb2

    data, pos, parts, rows = path.read_bytes(), 7, b"", []
    while pos + 7 <= len(data):
        if 32768 - pos % 32768 < 7:  # a block's tail too short for a header is padding
            pos += 32768 - pos % 32768
            continue
        length, kind = int.from_bytes(data[pos + 4 : pos + 6], "little"), data[pos + 6]
        chunk, pos = data[pos + 7 : pos + 7 + length], pos + 7 + length
        parts = chunk if kind in (1, 2) else parts + chunk
        if kind in (1, 4):  # FULL or LAST: a whole record
            record = wandb_internal_pb2.Record()
            record.ParseFromString(parts)
            if record.WhichOneof("record_type") == "history":
                rows.append({i.key or "/".join(i.nested_key): i.value_json for i in record.history.item})
    return rows


@pytest.mark.slow
def test_wandb_offline_run_logs_the_judge_columns_and_the_curves(tmp_path):
    pytest.importorskip("wandb")
    out = train("wandb", tmp_path, WANDB_MODE="offline", WANDB_DIR=str(tmp_path), WANDB_SILENT="true")
    (run,) = (tmp_path / "wandb").glob("offline-run-*")
    tables = [json.loads(p.read_text()) for p in (run / "files" / "media" / "table").glob("completions_*.table.json")]
    steps = {t["data"][0][t["columns"].index("step")]: t for t in tables}  # the last log repeats the last table
    assert sorted(steps) == list(range(1, STEPS + 1))
    assert_judge_columns(steps[STEPS]["columns"], steps[STEPS]["data"], judged_rows(out, STEPS))
    (log,) = run.glob("run-*.wandb")
    history = wandb_history(log)
    for name in CURVES:
        assert len([float(row[name]) for row in history if name in row]) == STEPS, name


@pytest.mark.slow
def test_trackio_run_logs_the_judge_columns_and_the_curves(tmp_path):
    pytest.importorskip("trackio", reason="the trackio extra: pip install 'poly_epo_trl[trackio]'")
    out = train("trackio", tmp_path, TRACKIO_DIR=str(tmp_path / "trackio"))
    with sqlite3.connect(tmp_path / "trackio" / "huggingface.db") as db:  # the project TrainingArguments names
        logged = [json.loads(metrics) for (metrics,) in db.execute("SELECT metrics FROM metrics ORDER BY id")]
    tables = [m["completions"]["_value"] for m in logged if "completions" in m]
    last = next(rows for rows in tables if rows[0]["step"] == STEPS)
    columns = list(last[0])
    assert_judge_columns(columns, [[row[c] for c in columns] for row in last], judged_rows(out, STEPS))
    curves = {name for m in logged for name in m}
    assert curves >= CURVES
