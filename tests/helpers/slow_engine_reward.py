"""The sum_pair task's reward, 0.4 s slower, under the built-in's own name (``sum_pair_reward``), so its logged
metrics have the built-in's keys: a test can kill a run between checkpoints and compare it with a fast run."""

import time

from poly_epo_trl.tasks.sum_pair import sum_pair_reward as builtin


def sum_pair_reward(prompts, completions, **kwargs):
    time.sleep(0.4)
    return builtin(prompts, completions)
