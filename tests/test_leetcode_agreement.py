"""The code reward agrees with LeetCodeDataset's own evaluator on a fixed sample of real rows (about 100).

The whole train file runs in ``benchmarks/leetcode_agreement.py``; this is the same comparison on every 19th row.
"""

import pytest
from bubblewrap import needs_bwrap
from shared_data import LEETCODE, needs_leetcode

from poly_epo_trl.rewards import CodeReward
from poly_epo_trl.rewards.leetcode import compare, load_rows

pytestmark = [pytest.mark.shared_data, needs_leetcode, needs_bwrap]


@pytest.mark.slow
def test_reward_agrees_with_the_datasets_evaluator():
    rows = load_rows(LEETCODE, stride=19)
    assert len(rows) >= 99
    report = compare(rows, CodeReward(max_workers=1), workers=2)
    for source in ("completion", "response", "response_own_extraction"):
        part = report[source]
        assert part.get("false_positive", 0) == 0, part["disagreements"]
        assert part["agree"] / part["rows"] >= 0.995, part["disagreements"]
        assert part["reference_pass"] >= 0.9 * part["rows"]  # the sample holds mostly correct programs
