"""A Python judge (``judge: python:rank_judge:pair_judge_by_rank``) that clusters as the sum_pair task's judge does
and appends the judging process's global rank to ``$RANK_JUDGE_LOG``, one line a group: which machine judged what."""

import os

from poly_epo_trl.tasks.sum_pair import pair_judge


def pair_judge_by_rank(prompt: str, completions: list[str]) -> list[int]:
    with open(os.environ["RANK_JUDGE_LOG"], "a") as log:
        log.write(f"{os.environ.get('RANK', '0')}\n")
    return pair_judge(prompt, completions)
