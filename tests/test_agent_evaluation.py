"""Agents' held-out evaluation: episodes played as TRL's tool loop plays them in training, scored with the
environments' rewards and the judge reading the trajectories.

The first tests script the model's part (``agents.scripted_generate``), so the trajectories training produced and
those the evaluation plays can be compared message for message. The last one plays the shipped goldbach warm start
(a real tiny agent) and checks its pass@1 against what the agent example's own, separately written player measures.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from unittest.mock import patch

import pytest
from agents import COUNTER_PLANS, Counter, plan_script, save_tool_model, scripted_generate
from datasets import Dataset

from poly_epo_trl import PolyEPOConfig, PolyEPOTrainer
from poly_epo_trl.commands.eval import main as eval_main
from poly_epo_trl.evaluation.episodes import Agent, EpisodeSampler, observed_prompt, run_tool_calls
from poly_epo_trl.evaluation.runner import episode_metrics
from poly_epo_trl.evaluation.sampling import SamplingSettings
from poly_epo_trl.evaluation.scoring import Scorer
from poly_epo_trl.tasks.goldbach_agent import GoldbachEnvironment, plan_judge, submitted_pair, warm_start_model
from poly_epo_trl.tasks.goldbach_agent import rows as goldbach_rows
from poly_epo_trl.tasks.prime_pair import is_prime
from poly_epo_trl.text import NO_RESULT, final_text, judge_input, plan_text

os.environ["TRL_EXPERIMENTAL_SILENCE"] = "1"
PROMPT = [{"role": "user", "content": "Make the counter reach 4."}]
REACHED = {'add({"n": 4})\nIt is 4.', 'add({"n": 2})\ndouble({})\nIt is 4.', 'double({})\nadd({"n": 4})\nIt is 4.'}


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return save_tool_model(tmp_path_factory.mktemp("tool_model"))


def roles(messages: list) -> list[str]:
    return [m["role"] for m in messages]


class Recorder:
    """A ``python:`` judge that keeps what it was given and puts everything in one cluster."""

    def __init__(self) -> None:
        self.trajectories: list = []

    def __call__(self, prompt: str, completions: list) -> list[int]:
        self.trajectories += completions
        return [0] * len(completions)


def counter_trainer(model, tmp_path, judge, iterations: int | None, **overrides) -> PolyEPOTrainer:
    args = PolyEPOConfig(
        output_dir=str(tmp_path / "out"),
        per_device_train_batch_size=16,
        num_generations=8,
        set_size=4,
        max_tool_calling_iterations=iterations,
        max_steps=1,
        learning_rate=1e-9,
        report_to="none",
        save_strategy="no",
        use_cpu=True,
        seed=0,
        **overrides,
    )
    rows = Dataset.from_dict({"prompt": [PROMPT] * 2, "target": [4] * 2})
    return PolyEPOTrainer(model=str(model), args=args, train_dataset=rows, environment_factory=Counter, judge=judge)


@pytest.mark.parametrize(("iterations", "budget"), [(None, 512), (1, 512), (None, 90), (None, 60)])
def test_held_out_episodes_are_the_trajectories_training_plays(iterations, budget, model_dir, tmp_path):
    """With the same scripted model, every plan the evaluation plays reads, message for message, as the trajectory
    TRL's tool loop made of it in training (one tool round only: the second call is left unrun by both; a budget of
    90 tokens: the turn after a tool result is cut where the budget ends; of 60: a call's result would pass it and is
    taken back, by both), and the rewards are the environments'."""
    judge = Recorder()
    trainer = counter_trainer(model_dir, tmp_path, judge, iterations, max_completion_length=budget)
    script = plan_script(COUNTER_PLANS)
    with patch.object(trainer.model, "generate", side_effect=scripted_generate(trainer.processing_class, script)):
        trainer.train()
    trained = {plan_text(t): t for t in judge.trajectories}

    settings = SamplingSettings(num_samples=24, max_new_tokens=budget, seed=3)
    sampler = EpisodeSampler.for_trainer(trainer, settings, Agent(Counter, [], iterations))
    generate = scripted_generate(trainer.processing_class, script, seed=1)
    with patch.object(trainer.model, "generate", side_effect=generate):
        [(episodes, environments)] = sampler.play([{"prompt": PROMPT, "target": 4}], [0])
    assert len(episodes) == len(environments) == 24
    compared = set()
    for episode in episodes:
        plan = plan_text(episode)
        if plan in trained:
            assert judge_input(episode) == trained[plan]
            compared.add(plan)
    assert len(compared) >= 4, f"only {sorted(compared)} were played by both"
    two_rounds = [e for e in episodes if len([m for m in e if m["role"] == "tool"]) == 2]
    if budget == 60:  # a call fits, its result does not: taken back, the episode ends on the call, in both
        assert all(roles(e) == ["assistant"] for e in episodes) and any(e[0].get("tool_calls") for e in episodes)
    elif budget == 90:
        assert not two_rounds and any("<tool_call>" in final_text(e) for e in episodes)  # a turn cut mid-call
    elif iterations == 1:
        assert not two_rounds
        assert any(e[-1].get("tool_calls") for e in episodes)  # a second call, not run
    else:
        assert two_rounds and all(e[-1]["content"] == "It is 4." for e in two_rounds)
    # the rewards are the environment's: exactly the episodes whose counter reached 4
    scores = Scorer([]).rewards([{"prompt": PROMPT, "target": 4}], [episodes], [environments])[0]
    # with 60 tokens, a call whose result is taken back has still run (as in TRL's loop): add 4 reached 4
    reached = REACHED | ({f'add({{"n": 4}}) {NO_RESULT}'} if budget == 60 else set())
    assert scores == [float(plan_text(e) in reached) for e in episodes]


def test_tool_calls_are_answered_as_trls_tool_loop_answers_them():
    environment = Counter()
    environment.reset(target=4)
    tools = Agent(Counter).episode_tools(environment)
    assert [t.__name__ for t in tools] == ["add", "double"]
    calls = [
        {"type": "function", "function": {"name": "add", "arguments": {"n": 3}}},
        {"type": "function", "function": {"name": "triple", "arguments": {}}},
        {"type": "function", "function": {"name": "add", "arguments": {"m": 1}}},
        {"type": "code", "name": "x"},
    ]
    messages = run_tool_calls(calls, tools)
    assert [m["content"] for m in messages] == [
        "3",
        "{'error': 'Tool triple not found.'}",
        "{'error': \"Counter.add() got an unexpected keyword argument 'm'\"}",
        "{'error': 'Unsupported tool call type: code'}",
    ]
    assert [m["name"] for m in messages] == ["add", "triple", "add", "x"]
    assert observed_prompt(PROMPT, " Now.")[-1]["content"] == "Make the counter reach 4. Now."
    assert observed_prompt(PROMPT, None) == PROMPT
    with pytest.raises(ValueError, match="environment_factory or tools"):
        Agent()


@pytest.fixture(scope="module")
def goldbach_trainer(tmp_path_factory) -> PolyEPOTrainer:
    """A trainer over the shipped goldbach warm start (a real tiny agent), as the agent recipe makes it."""
    args = PolyEPOConfig(
        output_dir=str(tmp_path_factory.mktemp("goldbach") / "out"),
        per_device_train_batch_size=8,
        num_generations=8,
        max_completion_length=128,
        max_tool_calling_iterations=1,
        report_to="none",
        use_cpu=True,
    )
    rows = goldbach_rows("test")
    return PolyEPOTrainer(
        model=warm_start_model(),
        args=args,
        train_dataset=rows,
        environment_factory=GoldbachEnvironment,
        judge=plan_judge,
    )


def goldbach_sampler(trainer: PolyEPOTrainer, num_samples: int, seed: int) -> EpisodeSampler:
    settings = SamplingSettings(num_samples=num_samples, max_new_tokens=128, seed=seed)
    return EpisodeSampler.for_trainer(trainer, settings, Agent(GoldbachEnvironment, [], 1))


def test_a_problems_episodes_depend_on_the_seed_and_its_index_only(goldbach_trainer):
    """Played alone or beside other problems (as the processes of a run split them), a problem's episodes are the
    same; another seed plays others."""
    table = [dict(row) for row in goldbach_rows("test")]

    def play(seed: int, indices: list[int]) -> list[list]:
        played = goldbach_sampler(goldbach_trainer, 6, seed).play([table[i] for i in indices], indices)
        return [episodes for episodes, _ in played]

    together = play(0, [0, 1, 2])
    assert play(0, [1]) == together[1:2]
    assert play(1, [1]) != together[1:2]
    assert all(episode[0]["role"] == "assistant" for episodes in together for episode in episodes)


def test_the_goldbach_warm_start_plays_held_out_sums_as_the_agent_example_measures_it(goldbach_trainer):
    """The shipped warm start, 32 episodes on each of the 15 held-out sums: pass@1 within three standard errors of
    0.124, what the agent example's own player measured over 5 seeds (README), and distinct successful plans."""
    table = [dict(row) for row in goldbach_rows("test")]
    sampler = goldbach_sampler(goldbach_trainer, 32, 0)
    metrics = episode_metrics(sampler, table, list(range(len(table))), Scorer([], judge=plan_judge))
    pass_at_1 = sum(m["pass_at_k"][0] for m in metrics) / len(metrics)
    standard_error = (0.124 * 0.876 / (32 * len(metrics))) ** 0.5
    assert abs(pass_at_1 - 0.124) < 3 * standard_error, pass_at_1
    assert sum(m["distinct_correct_clusters"] for m in metrics) / len(metrics) > 1


AGENT_EVAL = str(Path(__file__).resolve().parent.parent / "recipes/tiny/eval/config_agent_cpu.yaml")


def goldbach_reward(total: int, episode: list) -> float:
    """The environment's reward, read off the trajectory: the last submitted pair is two primes summing to S."""
    pair = submitted_pair(episode)
    return float(pair is not None and sum(pair) == total and all(map(is_prime, pair)))


def test_poly_epo_eval_plays_an_agents_episodes_and_a_killed_run_plays_the_lost_problem_again(tmp_path, caplog):
    """``poly-epo eval`` on the agent recipe: each problem's episodes are written as trajectories, scored by the
    environment (what its reward reads off the trajectory) and the plan judge. A run killed between writing a
    problem's episodes and their scores plays that problem again and gets the same episodes and report."""
    out = tmp_path / "eval"
    argv = ["--config", AGENT_EVAL, "--output_dir", str(out), "--max_problems", "4", "--num_samples", "8"]
    argv += ["--chunk_size", "1"]
    report = eval_main(argv)
    samples = [json.loads(line) for line in (out / "warm_start" / "samples.jsonl").read_text().splitlines()]
    scores = [json.loads(line) for line in (out / "warm_start" / "scores.jsonl").read_text().splitlines()]
    totals = [row["total"] for row in goldbach_rows("test")]
    assert [s["index"] for s in samples] == [s["index"] for s in scores] == [0, 1, 2, 3]
    for sample, score in zip(samples, scores, strict=True):
        episodes = sample["completions"]
        assert len(episodes) == 8 and all(e[0]["role"] == "assistant" for e in episodes)
        assert any(roles(e) == ["assistant", "tool", "assistant"] for e in episodes)
        assert score["rewards"] == [goldbach_reward(totals[sample["index"]], e) for e in episodes]
        assert score["clusters"] == plan_judge("", episodes)
    assert report["summaries"]["warm_start"]["pass_at_k"]["mean"][-1] > 0

    lines = (out / "warm_start" / "scores.jsonl").read_text().splitlines(keepends=True)
    (out / "warm_start" / "scores.jsonl").write_text("".join(lines[:-1]))  # killed before the last scores
    with caplog.at_level("INFO", logger="poly_epo_trl.evaluation.runner"):
        again = eval_main(argv)
    assert "resuming with 3 of 4 problems scored" in caplog.text
    replayed = [json.loads(line) for line in (out / "warm_start" / "samples.jsonl").read_text().splitlines()]
    assert len(replayed) == 5 and replayed[4] == samples[3]
    assert again["summaries"] == report["summaries"]


@pytest.mark.parametrize(
    ("keys", "message"),
    [
        (["--backend", "vllm"], "backend='vllm': an agent's episodes are played with transformers"),
        (["--dataset_name", "builtin:sum_pair"], "reset needs 'total'"),
        (["--max_tool_calling_iterations", "-1"], "max_tool_calling_iterations=-1"),
    ],
)
def test_poly_epo_eval_refuses_what_an_agent_cannot_be_evaluated_with(keys, message, tmp_path, capsys):
    with pytest.raises(SystemExit) as stopped:
        eval_main(["--config", AGENT_EVAL, "--output_dir", str(tmp_path), *keys])
    assert stopped.value.code == 2
    assert message in capsys.readouterr().err


def test_an_agent_evaluations_judge_is_told_the_tools_as_trainings_is(tmp_path):
    from poly_epo_trl.assembly import assemble_evaluation
    from poly_epo_trl.commands.eval import parse

    argv = ["--config", AGENT_EVAL, "--output_dir", str(tmp_path), "--max_problems", "2"]
    parts = assemble_evaluation(
        parse([*argv, "--judge", "openai:http://127.0.0.1:9/v1/judge", "--judge_template", "agent"])
    )
    assert parts.scorer.judge.judge.tools == (  # a language-model judge, built with them (nothing is asked yet)
        "- submit(p: integer, q: integer): Submit two numbers whose sum is S. (p: The first number; q: The second "
        "number)"
    )
