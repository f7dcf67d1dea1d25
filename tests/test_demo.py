import json

import pytest
from PIL import Image

from poly_epo_trl.demo.run import main
from poly_epo_trl.tasks.sum_pair import is_correct, pair_judge, parse_pair, sum_pair_reward


def test_task_reward_and_judge():
    assert sum_pair_reward(["S=12:", "S=12:", "S=12:", "S=12:"], ["5+7", "7+5", "0+12", "5+8"]) == [1, 1, 0, 0]
    assert parse_pair(" 7+5 ") == (5, 7) and parse_pair("7+") is None and parse_pair("07+5") is None
    assert pair_judge("S=12:", ["5+7", "7+5", "3+9", "x", "5+8"]) == [0, 0, 1, 100, 2]
    assert is_correct("S=99:", "98+1")


@pytest.mark.slow
def test_fast_demo_produces_table_json_and_plot(tmp_path, capsys):
    out = tmp_path / "demo"
    report = main(
        ["--out", str(out), "--steps", "3", "--curve-every", "2", "--eval-samples", "4", "--curve-samples", "2"]
    )
    printed = capsys.readouterr().out
    for label in ("GRPO (Dr.GRPO)", "GRPO+DIV", "Poly-EPO", "warm start", "distinct correct"):
        assert label in printed
    saved = json.loads((out / "results.json").read_text())
    assert saved["summary"].keys() == {"grpo", "grpo_div", "poly_epo"}
    for method, by_seed in saved["runs"].items():
        run = by_seed["0"]
        assert [p["step"] for p in run["curve"]] == [0, 2, 3], method
        assert run["final"]["ks"] == [1, 2, 4]
        assert 0 <= run["final"]["pass_at_1"] <= 1
        assert 0 <= run["final"]["distinct_correct"] <= 4
    assert report["distinct_ratio_poly_epo_vs_grpo"] == saved["distinct_ratio_poly_epo_vs_grpo"]
    with Image.open(out / "demo.png") as image:
        assert image.size[0] > 500 and image.size[1] > 300
        assert len(set(image.convert("L").getdata())) > 10  # drawn, not blank


def test_demo_rejects_a_missing_checkpoint(tmp_path):
    with pytest.raises(FileNotFoundError, match="warm_start"):
        main(["--out", str(tmp_path), "--checkpoint", str(tmp_path / "nothing")])
