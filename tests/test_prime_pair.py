"""The hard CPU task: Goldbach partitions of even sums, rare under the shipped warm start."""

from itertools import product

from poly_epo_trl.evaluation.report import summarize
from poly_epo_trl.evaluation.runner import policy_metrics
from poly_epo_trl.evaluation.sampling import SamplingSettings
from poly_epo_trl.evaluation.scoring import Scorer
from poly_epo_trl.judges import CallableJudge
from poly_epo_trl.models import resolve_model
from poly_epo_trl.tasks import TASKS, task_defaults
from poly_epo_trl.tasks.prime_pair import (
    ALL_TOTALS,
    TRAIN_TOTALS,
    is_correct,
    partitions,
    prime_pair_reward,
    rows,
)
from poly_epo_trl.tasks.sum_pair import pair_judge

PRIMES_BELOW_100 = [2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71, 73, 79, 83, 89, 97]


def test_partitions_are_every_prime_pair_and_the_reward_accepts_exactly_them():
    for total in ALL_TOTALS:
        expected = {(p, q) for p, q in product(PRIMES_BELOW_100, repeat=2) if p <= q and p + q == total}
        assert set(partitions(total)) == expected and expected, total
        correct = {(a, total - a) for a in range(1, total) if is_correct(f"S={total}:", f"{a}+{total - a}")}
        assert {tuple(sorted(pair)) for pair in correct} == expected
    prompts = ["S=12:"] * 6
    assert prime_pair_reward(prompts, ["5+7", "7+5", "1+11", "3+9", "05+7", "5+7+0"]) == [1, 1, 0, 0, 0, 0]


def test_the_pair_judge_clusters_partitions_and_splits_are_disjoint():
    assert pair_judge("S=24:", ["5+19", "19+5", "7+17", "x", "3+21", "7+17"]) == [0, 0, 1, 100, 2, 1]
    train, test = rows("train")["problem"], rows("test")["problem"]
    assert len(test) == 15 and len(train) == len(TRAIN_TOTALS) == 30 and not set(train) & set(test)


def test_recipe_defaults_name_the_task_reward_judge_and_warm_start():
    defaults = task_defaults("builtin:prime_pair")
    assert defaults["reward_funcs"] == ["prime_pair"] and defaults["judge"] == "sum_pair"
    assert defaults["model_name_or_path"] == "builtin:demo" and TASKS.get("prime_pair").held_out_split == "test"


def test_correct_answers_are_rare_but_reachable_under_the_warm_start():
    """What makes the task hard: the warm start is right on about 1 answer in 7, yet most prompts are solved
    within 16 tries, with more than one partition on average."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = resolve_model("builtin:demo")
    model, tokenizer = AutoModelForCausalLM.from_pretrained(path), AutoTokenizer.from_pretrained(path)
    held_out = [{"prompt": problem} for problem in rows("test")["problem"]]
    scorer = Scorer([prime_pair_reward], None, CallableJudge(pair_judge))
    metrics = policy_metrics(model, tokenizer, held_out, range(len(held_out)), scorer, SamplingSettings(16, 6, 1.0))
    summary = summarize(metrics, num_resamples=50)
    pass_at = dict(zip(summary["ks"], summary["pass_at_k"]["mean"], strict=True))
    assert 0.02 < pass_at[1] < 0.3, pass_at
    assert pass_at[16] > 0.6 and summary["distinct_correct_clusters"]["mean"] > 1, summary


def test_demo_trains_and_evaluates_the_task_it_names(tmp_path):
    """`poly-epo demo --task prime_pair`: the runs train on the task's 30 sums with its reward, and the held-out
    table scores Goldbach partitions (the warm start's pass@1 is far below its 0.7 on the toy task)."""
    import json

    from poly_epo_trl.commands.demo.run import main

    out = tmp_path / "demo"
    argv = ["--task", "prime_pair", "--out", str(out), "--steps", "1", "--curve-every", "1", "--methods", "poly_epo"]
    report = main([*argv, "--eval-samples", "8", "--curve-samples", "2"])
    record = json.loads((out / "runs" / "poly_epo-seed0" / "training_problems.json").read_text())
    assert record["dataset_name"] == "builtin:prime_pair" and len(record["fingerprints"]) == len(TRAIN_TOTALS)
    warm = report["summary"]["warm start"]
    assert warm["num_problems"] == 15 and warm["pass_at_k"]["mean"][0] < 0.3
