import json

import pytest
from PIL import Image

from poly_epo_trl.commands.demo.run import main
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
    assert printed.startswith("evaluating the warm start on prime_pair's")  # the default task, said first
    assert "training 1/3" in printed and "prime_pair: 15 held-out prompts" in printed
    assert "(mean [95% interval over 15 problems, 1 seed (no seed spread in it)])" in printed  # one seed
    assert report["summary"]["warm start"]["interval"].endswith("1 seed (no seed spread in it)")
    last = printed.strip().splitlines()[-3:]  # the console ends with the numbers that matter and the figure
    assert last[0].startswith("pass@4 (problems solved within 4 tries): warm start ")
    assert last[1].startswith("Poly-EPO - GRPO, paired on problems and seeds (mean [95% interval]): distinct")
    assert last[2].startswith(f"figure: {out / 'demo.png'}")
    saved = json.loads((out / "results.json").read_text())
    assert saved["summary"].keys() == {"warm start", "GRPO (Dr.GRPO)", "GRPO+DIV", "Poly-EPO"}
    for method, by_seed in saved["runs"].items():
        run = by_seed["0"]
        assert [p["step"] for p in run["curve"]] == [0, 2, 3], method  # at start, every 2 steps, at the end
        assert run["final"]["ks"] == [1, 2, 4]
        assert 0 <= run["final"]["pass_at_k"]["mean"][0] <= 1
        assert 0 <= run["final"]["distinct_correct_clusters"]["mean"] <= 4
        # each run went through poly-epo train: its model and training problems are in its output_dir
        assert (out / "runs" / f"{method}-seed0" / "model.safetensors").is_file()
        assert (out / "runs" / f"{method}-seed0" / "training_problems.json").is_file()
    assert report["distinct_ratio_poly_epo_vs_grpo"] == saved["distinct_ratio_poly_epo_vs_grpo"]
    paired = saved["poly_epo_minus_grpo"]["pass@1"]  # the pass@1 gap of the means, with its paired interval
    assert paired["low"] <= paired["mean"] <= paired["high"]
    assert 100 * paired["mean"] == pytest.approx(saved["pass_at_1_gap_points"])
    with Image.open(out / "demo.png") as image:
        assert image.size[0] > 500 and image.size[1] > 300
        assert len(set(image.convert("L").getdata())) > 10  # drawn, not blank


def test_demo_numbers_are_what_poly_epo_eval_reports(tmp_path):
    """The demo's final evaluation is the library's: poly-epo eval on the demo's saved model, with the same samples
    per problem and seed, reports the same pass@k and distinct correct clusters."""
    from poly_epo_trl.commands.eval import main as evaluate

    out = tmp_path / "demo"
    report = main(
        [
            "--out",
            str(out),
            "--steps",
            "2",
            "--curve-every",
            "2",
            "--eval-samples",
            "4",
            "--curve-samples",
            "2",
            "--methods",
            "poly_epo",
            "--seeds",
            "3",
            "--task",
            "sum_pair",  # the task of recipes/tiny/eval/config_demo.yaml (the demo's default is prime_pair)
        ]
    )
    model = out / "runs" / "poly_epo-seed3"
    args = [
        "--config",
        "recipes/tiny/eval/config_demo.yaml",
        "--model_name_or_path",
        f"poly_epo={model}",
        "--num_samples",
        "4",
        "--seed",
        "3",
        "--output_dir",
        str(tmp_path / "eval"),
    ]
    summary = evaluate(args)["summaries"]["poly_epo"]
    final = report["runs"]["poly_epo"]["3"]["final"]
    assert summary["pass_at_k"]["mean"] == final["pass_at_k"]["mean"]
    assert summary["distinct_correct_clusters"]["mean"] == final["distinct_correct_clusters"]["mean"]


def test_demo_rejects_a_missing_checkpoint(tmp_path):
    with pytest.raises(SystemExit, match="no such directory"):
        main(["--out", str(tmp_path), "--checkpoint", str(tmp_path / "nothing")])


def test_demo_names_the_tasks_when_given_an_unknown_one(tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["--out", str(tmp_path), "--task", "no_such_task"])
    err = capsys.readouterr().err
    assert "--task 'no_such_task'" in err and "goldbach_agent" in err and "prime_pair" in err, err


@pytest.mark.slow
def test_make_demo_ends_with_the_claim_that_holds_on_every_machine(tmp_path, capsys):
    """``make demo``'s settings (one seed): the digits depend on the CPU's floating-point kernels, the claim the
    README states does not. Poly-EPO solves every held-out sum within 32 tries, no fewer than GRPO, and keeps more
    distinct correct pairs per sum than GRPO, with the paired 95% interval above zero."""
    report = main(["--out", str(tmp_path / "demo")])
    printed = capsys.readouterr().out.strip().splitlines()
    poly_epo, grpo = report["summary"]["Poly-EPO"], report["summary"]["GRPO (Dr.GRPO)"]
    assert poly_epo["pass_at_k"]["mean"][-1] == 1.0 and report["settings"]["eval_samples"] == 32
    assert poly_epo["pass_at_k"]["mean"][-1] >= grpo["pass_at_k"]["mean"][-1]
    distinct = report["poly_epo_minus_grpo"]["distinct correct"]
    assert distinct["low"] > 0, distinct
    assert printed[-3].startswith("pass@32 (problems solved within 32 tries): warm start 1.000, GRPO (Dr.GRPO) ")
    assert printed[-3].endswith("Poly-EPO 1.000")
