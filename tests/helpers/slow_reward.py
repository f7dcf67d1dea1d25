"""A user reward that takes its time, so a test can kill an evaluation mid-way."""

import time

from poly_epo_trl.tasks.sum_pair import sum_pair_reward


def slow_sum_pair_reward(prompts, completions, **kwargs):
    time.sleep(0.4)
    return sum_pair_reward(prompts, completions)


def slower_sum_pair_reward(prompts, completions, **kwargs):
    time.sleep(3.0)
    return sum_pair_reward(prompts, completions)
