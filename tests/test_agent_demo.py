"""The CPU agent example (``poly_epo_trl.demo.agent``: the demo on the agent task) and its task: the shipped warm
start plays the environment through the tool format TRL parses, and the example runs end to end through
``environment_factory``."""

import json
from collections import Counter

import pytest
from PIL import Image

from poly_epo_trl.assembly import assemble_training, held_out_agent
from poly_epo_trl.commands import train
from poly_epo_trl.commands.demo.agent import AGENT, main
from poly_epo_trl.commands.demo.run import recipe
from poly_epo_trl.evaluation.episodes import EpisodeSampler
from poly_epo_trl.evaluation.sampling import SamplingSettings
from poly_epo_trl.tasks.goldbach_agent import GoldbachEnvironment, plan_judge, submitted_pair
from poly_epo_trl.tasks.prime_pair import partitions


def call(p, q):
    return {"type": "function", "function": {"name": "submit", "arguments": {"p": p, "q": q}}}


def test_the_environment_owns_the_reward_and_the_judge_clusters_by_submitted_pair():
    env = GoldbachEnvironment()
    env.reset(total=20)
    assert env.get_reward() == 0.0  # nothing submitted
    assert env.submit(3, 17) == "3+17=20" and env.get_reward() == 1.0
    assert env.submit(5, 15) == "5+15=20" and env.get_reward() == 0.0  # the last submission counts
    trajectories = [
        [{"role": "assistant", "content": "", "tool_calls": [call(3, 17)]}],
        [{"role": "assistant", "content": "", "tool_calls": [call(17, 3)]}],
        [{"role": "assistant", "content": "", "tool_calls": [call(7, 13)]}],
        [{"role": "assistant", "content": "3+17"}],  # no tool call: no plan
        [{"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": {"name": "submit"}}]}],
    ]
    assert plan_judge("S=20:", trajectories) == [0, 0, 1, 100, 100]
    assert submitted_pair(trajectories[1]) == (3, 17)


def test_the_shipped_warm_start_calls_the_tool_with_pairs_summing_to_s(tmp_path):
    """The warm start's episodes on 4 held-out sums, played by the demo's own path (the recipe's trainer, evaluation's
    episode player): a tool call, its result and a last word; pairs summing to S; about 1 in 7 of them prime."""
    parsed = train.parse(recipe("grpo", 0, AGENT, tmp_path))
    parts = assemble_training(*parsed)
    trainer = train.make_trainer(*parsed, parts, print_logs=False)
    settings = SamplingSettings(num_samples=32, max_new_tokens=parsed[1].max_completion_length, seed=0)
    sampler = EpisodeSampler.for_trainer(trainer, settings, held_out_agent(parts, parsed[1]))
    rows = parts.eval_rows[:4]
    played = [
        (row["total"], trajectory, environment.get_reward())
        for row, (trajectories, environments) in zip(rows, sampler.play(rows, range(4)), strict=True)
        for trajectory, environment in zip(trajectories, environments, strict=True)
    ]
    roles = Counter(tuple(m["role"] for m in t) for _, t, _ in played)
    assert roles[("assistant", "tool", "assistant")] >= 0.9 * len(played), roles
    pairs = [(total, submitted_pair(t)) for total, t, _ in played]
    assert sum(pair is not None and sum(pair) == total for total, pair in pairs) >= 0.4 * len(pairs)
    right = sum(r for _, _, r in played) / len(played)
    assert 0.05 <= right <= 0.5, right  # about 1 in 7 pairs is prime: room to learn
    correct = {pair for total, pair in pairs if pair in partitions(total)}
    assert len(correct) >= 4  # several successful plans already


@pytest.mark.slow
def test_the_agent_example_end_to_end(tmp_path, capsys):
    out = tmp_path / "agent"
    report = main(
        ["--out", str(out), "--steps", "3", "--curve-every", "2", "--eval-samples", "4", "--curve-samples", "2"]
    )
    printed = capsys.readouterr().out
    assert "goldbach_agent: 15 held-out prompts, 4 samples each" in printed
    last = printed.strip().splitlines()[-3:]
    assert last[0].startswith("pass@4 (problems solved within 4 tries): warm start ")
    assert last[1].startswith("Poly-EPO - GRPO, paired on problems and seeds (mean [95% interval]): distinct")
    assert last[2].startswith(f"figure: {out / 'demo.png'}")
    saved = json.loads((out / "results.json").read_text())
    assert saved["summary"].keys() == {"warm start", "GRPO (Dr.GRPO)", "Poly-EPO"}
    for method, by_seed in saved["runs"].items():
        run = by_seed["0"]
        assert [point["step"] for point in run["curve"]] == [0, 2, 3], method
        assert run["final"]["ks"] == [1, 2, 4]
    assert saved["summary"]["warm start"]["pass_at_k"]["mean"][-1] > 0
    assert report["summary"] == saved["summary"]
    assert Image.open(out / "demo.png").size[0] > 500
