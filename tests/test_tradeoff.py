"""The trade-off task: every prime pair is correct, only the one with the smallest prime earns the full reward."""

import pytest

from poly_epo_trl.tasks import TASKS, task_defaults
from poly_epo_trl.tasks.prime_pair import ALL_TOTALS, partitions
from poly_epo_trl.tasks.prime_pair import rows as prime_rows
from poly_epo_trl.tasks.tradeoff import reward, rows, tradeoff_reward


def test_the_smallest_prime_pair_earns_one_and_another_prime_pair_a_half():
    assert tradeoff_reward(["S=24:"] * 6, ["5+19", "19+5", "7+17", "11+13", "3+21", "x"]) == [1, 1, 0.5, 0.5, 0, 0]
    assert reward("S=10:", "3+7") == 1 and reward("S=10:", "5+5") == 0.5
    for total in ALL_TOTALS:
        best, *others = partitions(total)
        prompt = f"S={total}:"
        assert reward(prompt, f"{best[1]}+{best[0]}") == 1.0
        assert [reward(prompt, f"{p}+{q}") for p, q in others] == [0.5] * len(others)
    assert sum(len(partitions(s)) > 1 for s in ALL_TOTALS) >= 35  # most sums have a mode that costs reward


def test_the_task_counts_every_prime_pair_correct_and_shares_the_prime_pair_split():
    defaults = task_defaults("builtin:tradeoff")
    assert defaults["correct_reward_threshold"] == 0.5 and defaults["reward_funcs"] == ["tradeoff"]
    assert defaults["judge"] == "sum_pair" and defaults["model_name_or_path"] == "builtin:demo"
    assert TASKS.get("tradeoff").held_out_split == "test"
    for split in ("train", "test"):
        assert rows(split)["problem"] == prime_rows(split)["problem"]


@pytest.mark.slow
def test_the_held_out_evaluation_counts_a_half_reward_pair_correct(tmp_path):
    """A 1-step run's held-out summary counts pairs earning 0.5 as correct (the task's threshold): on some problem
    the share of correct samples is above the mean reward, which a threshold of 1.0 would never give."""
    from poly_epo_trl.commands.demo.run import DemoSettings, train_method

    settings = DemoSettings(task="tradeoff", steps=1, prompts_per_step=2, eval_samples=16, curve_every=1)
    final = train_method("grpo", 0, settings, tmp_path)["final"]
    shares = [(p["num_correct"] / p["num_samples"], p["mean_reward"]) for p in final["problems"]]
    assert all(reward <= share + 1e-9 for share, reward in shares)
    assert any(reward < share - 1e-9 for share, reward in shares)
