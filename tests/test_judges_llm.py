"""LM judges (``judges.llm``): the end of long responses is sent, large groups split into parts with consistent ids."""

import pytest

from poly_epo_trl.judges import (
    LMOptions,
)
from poly_epo_trl.judges.prompts import response_blocks


def test_lm_judges_send_the_end_of_long_responses():
    from poly_epo_trl.judges import LMJudge, Reply

    class Recording(LMJudge):
        name = "recording"

        async def request(self, messages, num_completions, temperature, structured):
            self.sent = messages[0]["content"]
            return Reply('{"1": {"strategy": "s", "cluster_id": 1}, "2": {"strategy": "t", "cluster_id": 2}}')

    long = "stepwork " * 500 + "so the answer is \\boxed{7}"
    judge = Recording("m", LMOptions(max_response_chars=100))
    assert judge.cluster_groups([("What?", [long, "short \\boxed{3}"])]) == [[0, 1]]
    assert f"[... {len(long) - 100} characters cut ...]" in judge.sent and "\\boxed{7}" in judge.sent
    assert "short \\boxed{3}" in judge.sent and judge.sent.count("stepwork") <= 11
    whole = Recording("m")
    whole.cluster_groups([("What?", [long, "x"])])
    assert whole.sent.count("stepwork") == 500


def test_split_evenly_covers_every_response_once_in_near_equal_parts():
    from poly_epo_trl.judges.prompts import split_evenly

    for count in range(1, 70):
        for most in range(2, 12):
            parts = split_evenly(count, most)
            assert [i for part in parts for i in part] == list(range(count))
            assert len(parts) == -(-count // most) and max(map(len, parts)) - min(map(len, parts)) <= 1
            assert all(len(part) <= most for part in parts)


def test_merge_part_keeps_known_ids_and_numbers_new_strategies_after_them():
    from poly_epo_trl.judges.prompts import merge_part

    known: dict[int, str] = {}
    assert merge_part(known, [5, 5, 100, 9], ["a", "a2", "junk", "b"]) == [1, 1, 100, 2]
    assert known == {1: "a", 2: "b"}
    # the next part: 2 is known; the judge reused 1 and 7 for two new strategies: they stay distinct and new
    assert merge_part(known, [2, 1, 7, 7, 100], ["b", "a", "c", "c", "junk"]) == [2, 1, 3, 3, 100]
    assert merge_part(known, [3, 4], ["c", "d"]) == [3, 4] and known[4] == "d"
    many = {i: f"s{i}" for i in range(1, 100)}  # the next new strategy skips the degenerate id
    assert merge_part(many, [0, 1000], ["x", "y"]) == [101, 102]


def test_lm_judge_splits_a_large_group_and_keeps_ids_consistent_across_parts():
    """A group of 20 with cap 6: 4 requests of 5, later ones listing the strategies found so far; the merged ids
    equal judging the whole group at once. A reply without strategy texts describes a strategy by its answer."""
    import re

    from poly_epo_trl.judges import LMJudge, Reply

    class ByLastWord(LMJudge):
        """Clusters by each answer's last word, with bare ids (no strategy texts)."""

        name = "by-last-word"

        async def request(self, messages, num_completions, temperature, structured):
            prompt = messages[0]["content"]
            sent.append(prompt)
            answers = response_blocks(prompt)
            known = {
                line.rsplit(" ", 1)[1].rstrip('"'): int(line.split()[2].rstrip(":"))
                for line in prompt.splitlines()
                if line.startswith("- cluster_id") and "like this answer" in line
            }
            start = int(re.search(r"from (\d+) on", prompt).group(1)) if known else 1
            first: dict[str, int] = {}
            ids = [known.get(a.split()[-1]) or first.setdefault(a.split()[-1], start + len(first)) for a in answers]
            return Reply("{" + ", ".join(f'"{k}": {i}' for k, i in enumerate(ids, 1)) + "}")

    sent: list[str] = []
    words = ["alpha", "beta", "alpha", "gamma", "beta", "delta", "alpha", "epsilon", "gamma", "beta"] * 2
    completions = [f"answer {k} ends with {w}" for k, w in enumerate(words)]
    whole = ByLastWord("m").cluster_groups([("p", completions)])[0]
    assert whole == [0, 1, 0, 2, 1, 3, 0, 4, 2, 1] * 2
    judge = ByLastWord("m", LMOptions(max_responses_per_request=6))
    sent.clear()
    assert judge.cluster_groups([("p", completions)])[0] == whole
    assert len(sent) == 4 and judge.pop_stats()["split_requests"] == 4
    assert "earlier answers" not in sent[0]
    assert all(len(response_blocks(s)) == 5 and "earlier answers" in s for s in sent[1:])
    with pytest.raises(ValueError, match="max_responses_per_request"):
        ByLastWord("m", LMOptions(max_responses_per_request=1))
