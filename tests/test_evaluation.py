"""Evaluation: maj@k and per-problem metrics against brute force, bootstrap bands, scoring, the sample store, the
whole `poly-epo eval` command on tiny offline models (report, plots, resuming after a kill)."""

import json
import math
import os
import signal
import subprocess
import sys
import time
from itertools import combinations
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from matplotlib.image import imread
from tiny import save_tiny_model

from poly_epo_trl.assembly import EvalArguments
from poly_epo_trl.commands.eval import parse
from poly_epo_trl.evaluation.metrics import majority_at_k, majority_correct
from poly_epo_trl.evaluation.report import bootstrap_mean, problem_metrics, summarize, vote_share_calibration
from poly_epo_trl.evaluation.sampling import SamplingSettings, choose_backend, vllm_sampling_kwargs
from poly_epo_trl.evaluation.scoring import Scorer
from poly_epo_trl.evaluation.store import SampleStore
from poly_epo_trl.judges import AnswerJudge
from poly_epo_trl.rewards import resolve_reward

ROOT = Path(__file__).resolve().parents[1]
DEMO_EVAL = "recipes/tiny/eval/config_demo.yaml"


def brute_majority(answers, correct, k):
    """Exact maj@k: over every k-subset, the share of its most-voted answers that are correct."""
    good = {a for a, ok in zip(answers, correct, strict=True) if ok and a is not None}
    values = []
    for subset in combinations(range(len(answers)), k):
        votes = {}
        for i in subset:
            if answers[i] is not None:
                votes[answers[i]] = votes.get(answers[i], 0) + 1
        if not votes:
            values.append(0.0)
            continue
        top = max(votes.values())
        winners = [a for a, v in votes.items() if v == top]
        values.append(sum(a in good for a in winners) / len(winners))
    return sum(values) / len(values)


answers_and_correctness = st.lists(
    st.tuples(st.sampled_from([None, "a", "b", "c"]), st.booleans()), min_size=2, max_size=7
).map(lambda rows: ([a for a, _ in rows], [a is not None and ok and a != "c" for a, ok in rows]))


@settings(max_examples=60, deadline=None)
@given(answers_and_correctness, st.data())
def test_majority_at_k_matches_brute_force(case, data):
    answers, correct = case
    n = len(answers)
    k = data.draw(st.integers(1, n))
    exact = brute_majority(answers, correct, k)
    estimate = majority_at_k(answers, correct, k, num_subsets=3000, seed=1)
    if k in (1, n):
        assert estimate == pytest.approx(exact)
    else:
        assert abs(estimate - exact) < 0.05


def test_majority_vote_ties_and_empty_answers():
    assert majority_correct(["x", "y"], [True, False]) == 0.5  # a tie: half the winners are right
    assert majority_correct(["x", "x", "y"], [True, True, False]) == 1.0
    assert majority_correct([None, None], [False, False]) == 0.0
    assert majority_correct(["x", None, None], [True, False, False]) == 1.0  # blanks do not vote


def test_problem_metrics_counts_correct_non_degenerate_clusters():
    rewards = [1.0, 1.0, 0.0, 1.0, float("nan"), 1.0]
    clusters = [0, 0, 1, 100, 2, 3]
    answers = ["5", "5", "4", None, None, "5"]
    m = problem_metrics(rewards, answers, clusters)
    assert m["num_correct"] == 4  # NaN is not correct
    assert m["distinct_clusters"] == 4 and m["distinct_correct_clusters"] == 2  # {0, 3}; 100 is degenerate
    assert m["vote_share"] == pytest.approx(3 / 6) and m["maj_at_k"][-1] == 1.0
    assert len(m["pass_at_k"]) == len(m["maj_at_k"]) == 4  # k = 1, 2, 4, 6
    assert problem_metrics(rewards, answers, None)["distinct_correct_clusters"] is None


def test_bootstrap_band_brackets_the_mean_and_narrows_with_more_problems():
    rng = np.random.default_rng(0)
    few, many = rng.random(20), rng.random(2000)
    mean, low, high = bootstrap_mean(few, 2000)
    assert low < mean < high
    _, low_many, high_many = bootstrap_mean(many, 2000)
    assert high_many - low_many < (high - low) / 4
    constant = bootstrap_mean(np.ones((5, 3)))
    assert np.allclose(constant[1], 1) and np.allclose(constant[2], 1)


def test_summary_and_vote_share_bins():
    problems = [problem_metrics([1.0] * 4, ["a"] * 4, [0] * 4), problem_metrics([0.0] * 4, ["a", "b", "c", "d"], None)]
    s = summarize(problems, num_resamples=50)
    assert s["ks"] == [1, 2, 4] and s["pass_at_k"]["mean"] == [0.5, 0.5, 0.5]
    assert s["distinct_correct_clusters"]["mean"] == 1.0  # only the clustered problem counts
    bins = vote_share_calibration(problems)
    assert [(b["count"], b["accuracy"]) for b in bins] == [(1, 0.0), (1, 1.0)]
    with pytest.raises(ValueError, match="different sample counts"):
        summarize([problems[0], problem_metrics([1.0] * 3, ["a"] * 3, None)])


def test_scorer_calls_rewards_like_trl_and_weights_them():
    seen = {}

    def length_reward(prompts, completions, answer, **kwargs):
        seen.update(prompts=prompts, completions=completions, answer=answer, kwargs=kwargs)
        return [float(len(c[0]["content"])) for c in completions]

    def sometimes_none(completions, **kwargs):
        return [None if "skip" in c[0]["content"] else 1.0 for c in completions]

    rows = [{"prompt": [{"role": "user", "content": "Q1"}], "answer": "7"}]
    scorer = Scorer([length_reward, sometimes_none], [0.5, 2.0], AnswerJudge(), vote_answer="last_number")
    (record,) = scorer.score(rows, [["is 7", "skip 3"]])
    assert seen["completions"][0] == [{"role": "assistant", "content": "is 7"}] and seen["answer"] == ["7", "7"]
    assert seen["prompts"] == [rows[0]["prompt"]] * 2 and "trainer_state" in seen["kwargs"]
    assert record["rewards"] == [0.5 * 4 + 2.0, 0.5 * 6] and record["answers"] == ["7", "3"]
    assert record["clusters"] == [0, 1]
    capped = Scorer([length_reward], judge=AnswerJudge(), vote_answer="last_number", judge_samples=1)
    (record,) = capped.score(rows, [["is 7", "skip 3"]])
    assert record["clusters"] == [0] and problem_metrics([1.0, 1.0], ["7", "3"], [0])["distinct_correct_clusters"] == 1
    with pytest.raises(ValueError, match="returned 1 values for 2"):
        Scorer([lambda completions, **kw: [1.0]]).score(rows, [["a", "b"]])
    with pytest.raises(ValueError, match="reward_weights has 1 entries for 2"):
        Scorer([length_reward, sometimes_none], [1.0])


def test_store_drops_a_cut_line_and_refuses_other_settings(tmp_path):
    store = SampleStore(tmp_path, {"model": "m", "num_samples": 4})
    store.append("samples", [{"index": 0, "completions": ["a"]}, {"index": 1, "completions": ["b"]}])
    with (tmp_path / "samples.jsonl").open("a") as handle:
        handle.write('{"index": 2, "compl')  # killed mid-write
    assert sorted(store.read("samples")) == [0, 1]
    store.append("samples", [{"index": 2, "completions": ["c"]}])
    assert sorted(SampleStore(tmp_path, {"model": "m", "num_samples": 4}).read("samples")) == [0, 1, 2]
    with pytest.raises(ValueError, match=r"num_samples: 4 -> 8.*overwrite"):
        SampleStore(tmp_path, {"model": "m", "num_samples": 8})
    assert SampleStore(tmp_path, {"model": "m", "num_samples": 8}, overwrite=True).read("samples") == {}


def test_sampling_settings_and_backends():
    with pytest.raises(ValueError, match="temperature"):
        SamplingSettings(temperature=0)
    kwargs = vllm_sampling_kwargs(SamplingSettings(num_samples=8, max_new_tokens=99, seed=3), index=5)
    assert kwargs["n"] == 8 and kwargs["max_tokens"] == 99 and kwargs["top_k"] == -1
    assert kwargs["seed"] != vllm_sampling_kwargs(SamplingSettings(seed=3), index=6)["seed"]
    assert choose_backend("auto") == "transformers"  # no vLLM on this machine
    with pytest.raises(ValueError, match="pip install 'poly_epo_trl\\[vllm\\]'"):
        choose_backend("vllm")
    with pytest.raises(ValueError, match=r"labels .* repeat"):
        EvalArguments(model_name_or_path=["a/ckpt", "b/ckpt"])
    assert EvalArguments(model_name_or_path=["x=a/ckpt", "b/ckpt/"]).checkpoints() == [
        ("x", "a/ckpt"),
        ("ckpt", "b/ckpt/"),
    ]


@pytest.mark.parametrize("recipe", sorted(ROOT.glob("recipes/*/eval/config_*.yaml")), ids=lambda p: p.parts[-3])
def test_every_eval_recipe_parses(recipe):
    args = parse(["--config", str(recipe)])
    assert args.checkpoints() and all(resolve_reward(name) for name in args.reward_funcs)
    assert args.sampling.num_samples == args.num_samples and (args.judge is None or args.make_judge())


def poly_epo_command(*args: str) -> list[str]:
    script = Path(sys.executable).parent / "poly-epo"
    return [str(script), *args] if script.exists() else [sys.executable, "-m", "poly_epo_trl.cli", *args]


ENV = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}


@pytest.fixture(scope="module")
def untrained(tmp_path_factory):
    return save_tiny_model(tmp_path_factory.mktemp("untrained"))


@pytest.mark.slow
def test_eval_command_writes_report_and_plots_for_two_checkpoints(tmp_path, untrained):
    out = tmp_path / "eval"
    command = poly_epo_command("eval", "--config", DEMO_EVAL, "--output_dir", str(out), "--num_samples", "8")
    command += ["--model_name_or_path", "warm_start=builtin:demo", f"untrained={untrained}"]
    result = subprocess.run(command, cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads((out / "report.json").read_text())
    warm, noise = report["summaries"]["warm_start"], report["summaries"]["untrained"]
    assert warm["num_problems"] == 15 and warm["ks"] == [1, 2, 4, 8]
    assert warm["pass_at_k"]["mean"][0] > 0.4 > noise["pass_at_k"]["mean"][0]  # the warm start learned the task
    assert np.all(np.diff(warm["pass_at_k"]["mean"]) >= -1e-9)
    assert warm["distinct_correct_clusters"]["mean"] > noise["distinct_correct_clusters"]["mean"]
    for name in ("report", "pass_at_k", "maj_at_k", "vote_share", "distinct_correct_clusters"):
        image = imread(out / f"{name}.png")
        assert image.shape[0] > 200 and image.shape[1] > 200 and image.std() > 0.05, name
    assert "warm_start" in result.stdout and "pass@1" in result.stdout
    for label in ("warm_start", "untrained"):
        lines = (out / label / "samples.jsonl").read_text().splitlines()
        assert len(lines) == 15 and all(len(json.loads(line)["completions"]) == 8 for line in lines)


@pytest.mark.slow
def test_a_killed_evaluation_resumes_without_resampling(tmp_path):
    def command(out, reward="sum_pair"):
        args = ["--config", DEMO_EVAL, "--output_dir", str(out), "--chunk_size", "1", "--reward_funcs", reward]
        return poly_epo_command("eval", *args, "--model_name_or_path", "demo=builtin:demo")

    killed, whole = tmp_path / "killed", tmp_path / "whole"
    slow = "tests.helpers.slow_reward:slow_sum_pair_reward"  # 0.4 s per problem: time to kill the run mid-way
    process = subprocess.Popen(command(killed, slow), cwd=ROOT, env=ENV, stdout=subprocess.DEVNULL)
    scores = killed / "demo" / "scores.jsonl"
    deadline = time.time() + 120
    while time.time() < deadline and not (scores.exists() and scores.read_text().count("\n") >= 2):
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.wait()
    sampled_before = (killed / "demo" / "samples.jsonl").read_text()
    num_sampled, num_scored = sampled_before.count("\n"), scores.read_text().count("\n")
    assert 2 <= num_scored <= num_sampled < 15, "the run was not killed mid-way"

    result = subprocess.run(command(killed), cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"resuming with {num_sampled} sampled and {num_scored} scored" in result.stderr
    sampled_after = (killed / "demo" / "samples.jsonl").read_text()
    assert sampled_after.startswith(sampled_before)  # kept as they were, then the rest appended
    indices = [json.loads(line)["index"] for line in sampled_after.splitlines()]
    assert sorted(indices) == list(range(15))  # each problem sampled once
    assert sorted(json.loads(line)["index"] for line in scores.read_text().splitlines()) == list(range(15))

    uninterrupted = subprocess.run(command(whole), cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=300)
    assert uninterrupted.returncode == 0, uninterrupted.stderr[-3000:]
    assert (whole / "demo" / "samples.jsonl").read_text() == sampled_after  # as if never killed
    report = json.loads((killed / "report.json").read_text())
    assert report["summaries"]["demo"] == json.loads((whole / "report.json").read_text())["summaries"]["demo"]
    assert not math.isnan(report["summaries"]["demo"]["pass_at_k"]["mean"][0])


@pytest.mark.slow
def test_eval_refuses_to_mix_settings_and_names_the_fix(tmp_path):
    out = tmp_path / "eval"
    base = poly_epo_command("eval", "--config", DEMO_EVAL, "--output_dir", str(out), "--max_problems", "2")
    first = subprocess.run(base, cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr[-3000:]
    second = subprocess.run([*base, "--temperature", "0.7"], cwd=ROOT, env=ENV, capture_output=True, text=True)
    assert second.returncode == 2 and "temperature: 1.0 -> 0.7" in second.stderr and "overwrite" in second.stderr
    bad = subprocess.run([*base, "--reward_funcs", "maths"], cwd=ROOT, env=ENV, capture_output=True, text=True)
    assert bad.returncode == 2 and "Unknown reward 'maths'" in bad.stderr


def test_cli_lists_its_commands():
    result = subprocess.run(poly_epo_command("--help"), cwd=ROOT, env=ENV, capture_output=True, text=True)
    assert result.returncode == 0 and all(c in result.stdout for c in ("train", "eval", "demo"))
    result = subprocess.run(poly_epo_command("serve"), cwd=ROOT, env=ENV, capture_output=True, text=True)
    assert result.returncode == 2 and "unknown command 'serve'" in result.stderr


def test_pass_at_k_callback_trains_with_a_stock_grpo_trainer(tmp_path):
    """A plain TRL ``GRPOTrainer`` (no Poly-EPO anywhere) logs held-out pass@k during training through the exported
    callback, built from the trainer's own rewards and sampling."""
    from tiny import SMALL, save_tiny_model, toy_dataset
    from trl import GRPOConfig, GRPOTrainer

    from poly_epo_trl import PassAtKCallback
    from poly_epo_trl.tasks.sum_pair import sum_pair_reward

    model = save_tiny_model(tmp_path / "model")
    settings = {k: v for k, v in SMALL.items() if k != "set_size"}
    args = GRPOConfig(output_dir=str(tmp_path / "out"), max_completion_length=8, **settings)
    trainer = GRPOTrainer(model=str(model), reward_funcs=sum_pair_reward, args=args, train_dataset=toy_dataset())
    held_out = toy_dataset(range(40, 43))
    trainer.add_callback(PassAtKCallback.for_trainer(trainer, held_out, eval_steps=1, num_samples=4, on_start=True))
    trainer.train()
    evaluated = [h for h in trainer.state.log_history if "eval_pass@1" in h]
    assert [h["step"] for h in evaluated] == [0, 1, 2]
    assert all(0.0 <= h["eval_pass@4"] <= 1.0 and h["eval_pass@1"] <= h["eval_pass@4"] for h in evaluated)
    assert "eval_distinct_correct_clusters" not in evaluated[0]  # no judge given
    # the evaluation's lines hold its metrics alone; each training line keeps its own (reward, ...)
    assert not any("reward" in h for h in evaluated)
    trained = [h for h in trainer.state.log_history if "loss" in h]
    assert [h["step"] for h in trained] == [1, 2] and all("reward" in h for h in trained)
    # why the callback logs through transformers' Trainer.log: GRPOTrainer.log still folds the training metrics
    # gathered since the last logging step into whatever it logs, and clears them (this fails once it no longer does)
    trainer._metrics["train"]["reward"].append(0.5)
    trainer.model.train()
    trainer.log({"eval_pass@1": 0.0})
    assert trainer.state.log_history[-1]["reward"] == 0.5 and not trainer._metrics["train"]
