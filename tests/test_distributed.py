import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from tiny import save_tiny_model

from poly_epo_trl import marginal_set_advantages

HERE = Path(__file__).parent


def run_two_processes(
    tmp_path, rows_per_rank: int, num_generations: int, set_size: int, port: int, fail_rank: int = -1
) -> list[dict]:
    model_dir = save_tiny_model(tmp_path / "model")
    env = {
        **os.environ,
        "OMP_NUM_THREADS": "1",
        "PYTHONPATH": f"{HERE / 'helpers'}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
    }
    command = [
        sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", str(port),
        str(HERE / "helpers" / "distributed_run.py"), str(model_dir), str(tmp_path),
        str(rows_per_rank), str(num_generations), str(set_size), str(fail_rank),
    ]  # fmt: skip
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-4000:]
    if fail_rank >= 0:
        return [{"error": (tmp_path / f"rank{k}.err").read_text()} for k in range(2)]
    return [torch.load(tmp_path / f"rank{k}.pt") for k in range(2)]


@pytest.mark.slow
def test_two_processes_with_a_straddling_group_match_single_process_advantages(tmp_path):
    ranks = run_two_processes(tmp_path, rows_per_rank=6, num_generations=4, set_size=2, port=29517)
    assert [r["world"] for r in ranks] == [2, 2]
    # Both ranks hold the same gathered batch: 3 groups of 4, judged once each in total per step.
    for key in ("rewards", "cluster_ids", "advantages"):
        torch.testing.assert_close(ranks[0][key], ranks[1][key])
    assert ranks[0]["rewards"].shape == (3, 4)
    per_step = [a + b for a, b in zip(ranks[0]["judged_groups"], ranks[1]["judged_groups"], strict=True)]
    assert per_step == [3, 3]
    assert ranks[0]["judged_groups"] == [2, 2] and ranks[1]["judged_groups"] == [1, 1]  # group 1 straddles: rank 0
    # The advantages equal a single-process computation on the gathered batch...
    expected = marginal_set_advantages(ranks[0]["rewards"], ranks[0]["cluster_ids"], 2)
    torch.testing.assert_close(ranks[0]["advantages"], expected)
    assert expected.abs().sum() > 0
    # ...and each rank's loss saw its own 6 rows of them (TRL shuffles rows within a rank: match them by text).
    assert ranks[0]["completions"] == ranks[1]["completions"]
    flat = expected.flatten().tolist()
    for rank, rows in ((0, range(0, 6)), (1, range(6, 12))):
        texts, advantages = ranks[rank]["seen"][-1]
        keys = list(zip(ranks[0]["prompts"], ranks[0]["completions"], strict=True))
        own = sorted((keys[i], round(flat[i], 6)) for i in rows)
        assert sorted(zip(texts, [round(a, 6) for a in advantages.tolist()], strict=True)) == own


@pytest.mark.slow
def test_a_rank_that_owns_no_group_still_trains(tmp_path):
    # One group of 8 over two ranks of 4 rows: rank 0 judges it, rank 1 judges nothing and must not hang.
    ranks = run_two_processes(tmp_path, rows_per_rank=4, num_generations=8, set_size=4, port=29518)
    assert ranks[0]["judged_groups"] == [1, 1] and ranks[1]["judged_groups"] == [0, 0]
    torch.testing.assert_close(ranks[0]["advantages"], ranks[1]["advantages"])
    expected = marginal_set_advantages(ranks[0]["rewards"], ranks[0]["cluster_ids"], 4)
    torch.testing.assert_close(ranks[1]["advantages"], expected)


@pytest.mark.slow
def test_a_judge_that_fails_on_one_process_stops_every_process_with_the_same_error(tmp_path):
    """Rank 1's judge raises: both ranks stop at the join with the same JudgeFailing, naming the process and the
    cause, instead of rank 0 waiting in a gather until the collective timeout (30 minutes by default)."""
    import time

    start = time.monotonic()
    ranks = run_two_processes(tmp_path, rows_per_rank=6, num_generations=4, set_size=2, port=29519, fail_rank=1)
    assert time.monotonic() - start < 300
    assert ranks[0]["error"] == ranks[1]["error"]
    assert "failed on process 1: ConnectionError: the judge server went away" in ranks[0]["error"]
