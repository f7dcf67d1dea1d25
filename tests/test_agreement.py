"""poly-epo judge-agreement on real samples and a real (fake-model) judge server process."""

import json
from pathlib import Path

import pytest
from judge_server import ServerProcess

from poly_epo_trl.commands.agreement import main
from poly_epo_trl.commands.eval import main as evaluate
from poly_epo_trl.evaluation.metrics import adjusted_rand_index
from poly_epo_trl.tasks.sum_pair import HELD_OUT_TOTALS, make_prompt, pair_judge

ROOT = Path(__file__).resolve().parents[1]
RECIPE = ["--config", "recipes/tiny/eval/config_demo.yaml"]


def write_samples(folder, groups):
    """A checkpoint folder as poly-epo eval writes it, with chosen completions for the held-out sums."""
    folder.mkdir(parents=True)
    settings = {"dataset_name": "builtin:sum_pair", "dataset_test_split": "test", "prompt_column": "problem"}
    (folder / "settings.json").write_text(json.dumps(settings))
    lines = [json.dumps({"index": i, "completions": c}) for i, c in enumerate(groups)]
    (folder / "samples.jsonl").write_text("\n".join(lines) + "\n")


def test_judges_that_cluster_alike_agree_and_costs_are_counted(tmp_path, monkeypatch):
    """Pairs written in one order only, and malformed answers marked DEGENERATE: the fake server (same first line,
    same cluster) partitions them exactly as the pair judge does, so their ARI is 1; the distinct judge splits
    repeated pairs, so its ARI with either is below 1, by exactly what the per-group ARI says."""
    monkeypatch.chdir(ROOT)
    groups = []
    for total in HELD_OUT_TOTALS[:6]:
        a, b = 1, total - 1
        groups.append([f"{a}+{b}", f"{a}+{b}", f"{a + 1}+{b - 1}", "DEGENERATE", f"{a}+{b}", f"{a + 2}+{b - 2}"])
    write_samples(tmp_path / "samples", groups)
    with ServerProcess(slots=1, latency=0.01, model="judge") as server:
        judges = ["--judges", "sum_pair", "openai", "distinct", "answer", "--judge_base_url", server.base_url]
        where = ["--samples", str(tmp_path / "samples"), "--max_problems", "6", "--output_dir", str(tmp_path)]
        report = main([*RECIPE, *where, *judges, "--judge_model", "judge"])
    pairs = {tuple(p["judges"]): p for p in report["pairs"]}
    assert pairs["sum_pair", "openai"]["ari"] == {"mean": 1.0, "low": 1.0, "high": 1.0}
    assert pairs["sum_pair", "openai"]["degenerate_agreement"]["mean"] == 1.0
    prompts = [make_prompt(t) for t in HELD_OUT_TOTALS[:6]]
    expected = [
        adjusted_rand_index(pair_judge(p, g), list(range(len(g)))) for p, g in zip(prompts, groups, strict=True)
    ]
    assert pairs["sum_pair", "distinct"]["ari"]["mean"] == pytest.approx(sum(expected) / 6) and expected[0] < 1
    assert pairs["sum_pair", "distinct"]["degenerate_agreement"]["mean"] == pytest.approx(5 / 6)  # distinct: none
    judges = report["judges"]
    assert judges["openai"]["tokens_per_group"] > 0 and judges["sum_pair"]["tokens_per_group"] == 0
    assert judges["sum_pair"]["degenerate_frac"] == pytest.approx(1 / 6) and judges["openai"]["failed_groups"] == 0
    assert all(j["seconds_per_group"] > 0 for j in judges.values())
    assert (tmp_path / "agreement.png").stat().st_size > 10_000
    assert json.loads((tmp_path / "agreement.json").read_text())["groups"] == 6


def test_agreement_on_samples_poly_epo_eval_wrote_with_the_embedding_judge(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    pytest.importorskip("sentence_transformers")
    evaluate([*RECIPE, "--num_samples", "8", "--max_problems", "5", "--output_dir", str(tmp_path / "eval")])
    where = ["--samples", str(tmp_path / "eval" / "demo"), "--output_dir", str(tmp_path / "agreement")]
    report = main([*RECIPE, "--num_samples", "8", "--max_problems", "5", *where, "--judges", "sum_pair", "embedding"])
    (pair,) = report["pairs"]
    assert pair["groups"] == 5 and -1 <= pair["ari"]["low"] <= pair["ari"]["mean"] <= pair["ari"]["high"] <= 1
    assert "sum_pair vs embedding" in capsys.readouterr().out
    # samples drawn on other rows are refused, with the way out
    with pytest.raises(SystemExit):
        main([*RECIPE, "--dataset_test_split", "train", "--samples", str(tmp_path / "eval" / "demo")])
    assert "drawn with other ['dataset_test_split']" in capsys.readouterr().err


def test_without_samples_it_samples_the_checkpoint_and_refuses_one_judge(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    args = [*RECIPE, "--num_samples", "4", "--max_problems", "3", "--output_dir", str(tmp_path)]
    report = main([*args, "--judges", "sum_pair", "distinct"])
    assert report["groups"] == 3 and (tmp_path / "demo" / "samples.jsonl").is_file()
    with pytest.raises(SystemExit):
        main([*args, "--judges", "answer"])
    assert "two or more different judge specs" in capsys.readouterr().err
