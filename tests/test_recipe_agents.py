"""Agents from a recipe: ``environment_factory``, ``tools`` and ``keep_columns`` in YAML, through ``poly-epo train``
(in-process and under ``accelerate launch``), and every way to get them wrong stopping at the door."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from agents import NOTES_SEEN, Lamp, save_tool_model

from poly_epo_trl import PolyEPOConfig, PolyEPOTrainer
from poly_epo_trl.commands.demo.agent import AGENT
from poly_epo_trl.commands.train import main, parse
from poly_epo_trl.evaluation.episodes import Agent, EpisodeSampler
from poly_epo_trl.evaluation.report import summarize
from poly_epo_trl.evaluation.runner import episode_metrics
from poly_epo_trl.evaluation.sampling import SamplingSettings
from poly_epo_trl.evaluation.scoring import Scorer
from poly_epo_trl.methods import SetSettings
from poly_epo_trl.tasks.goldbach_agent import GoldbachEnvironment, plan_judge, warm_start_model
from poly_epo_trl.tasks.goldbach_agent import rows as goldbach_rows

ROOT = Path(__file__).resolve().parent.parent
AGENT_RECIPE = "recipes/tiny/poly_epo/config_agent_cpu.yaml"


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return save_tool_model(tmp_path_factory.mktemp("tool_model"))


def test_the_agent_recipe_matches_the_agent_example():
    recipe = yaml.safe_load((ROOT / AGENT_RECIPE).read_text())
    example = AGENT
    assert recipe["learning_rate"] == example.learning_rate and recipe["max_steps"] == example.steps
    assert recipe["per_device_train_batch_size"] == example.prompts_per_step * example.num_generations
    assert recipe["num_generations"] == example.num_generations
    assert recipe.get("set_size", SetSettings().set_size) == SetSettings().set_size and example.method_settings == {}
    script_args, training_args, model_args = parse(["--config", AGENT_RECIPE])
    assert script_args.environment_factory == "goldbach_agent" and script_args.reward_funcs == []
    assert training_args.max_tool_calling_iterations == 1  # the task's: a submit call, then the last word
    assert (training_args.judge, model_args.model_name_or_path) == ("goldbach_agent", "builtin:goldbach_agent")
    # the held-out curve: the example's points (every curve_every steps, curve_samples episodes per held-out sum)
    assert (training_args.eval_steps, script_args.eval_num_samples) == (example.curve_every, example.curve_samples)
    assert script_args.eval_dataset_name == "builtin:goldbach_agent" and script_args.eval_at_start
    assert script_args.eval_vote_answer == "plan"  # the task's: majority vote over submitted pairs


@pytest.mark.slow
def test_the_agent_recipe_trains_on_two_processes(tmp_path):
    """``torchrun --nproc_per_node 2``: 3 groups of 8 over 2 ranks of 12 rollouts, so one group straddles the
    ranks and its judge gets the other rank's trajectories, gathered as messages. The held-out evaluation plays 8
    episodes on each of 5 held-out sums (3 on one rank, 2 on the other); at step 0 its numbers are those of the
    same episodes played in one process here."""
    out = tmp_path / "out"
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc_per_node",
        "2",
        "-m",
        "poly_epo_trl.train",
    ]
    command += ["--config", AGENT_RECIPE, "--max_steps", "2", "--logging_steps", "1"]
    command += ["--per_device_train_batch_size", "12", "--output_dir", str(out)]
    command += ["--eval_dataset_name", "builtin:goldbach_agent", "--eval_steps", "1", "--eval_num_samples", "8"]
    command += ["--eval_max_problems", "5", "--eval_at_start", "true"]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "TRL_EXPERIMENTAL_SILENCE": "1"}
    result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    logs = [eval(line[line.index("{") :]) for line in result.stdout.splitlines() if "'tools/call_frequency'" in line]
    assert len(logs) == 2
    for log in logs:
        # the warm start calls submit through TRL's tool loop; the environment's get_reward scores it
        assert float(log["tools/call_frequency"]) > 0.5 and "rewards/GoldbachEnvironment/mean" in log
        assert float(log["judge/groups"]) == 3
        # the plan judge calls exactly the rollouts without a submission degenerate: every trajectory reached it
        # whole, the straddling group's included
        without_call = 1 - float(log["tools/call_frequency"])
        assert float(log["poly_epo/degenerate_frac"]) == pytest.approx(without_call, abs=1e-3)
    assert (out / "model.safetensors").exists()
    evals = [eval(line[line.index("{") :]) for line in result.stdout.splitlines() if "'eval_pass@1'" in line]
    assert len(evals) == 3  # steps 0, 1, 2
    assert all(set(e) >= {"eval_pass@8", "eval_maj@8", "eval_distinct_correct_clusters"} for e in evals)
    expected = warm_start_held_out(tmp_path, num_samples=8, problems=5)
    for k, value in zip(expected["ks"], expected["pass_at_k"]["mean"], strict=True):
        assert float(evals[0][f"eval_pass@{k}"]) == pytest.approx(value, abs=1e-4)
    assert float(evals[0]["eval_maj@8"]) == pytest.approx(expected["maj_at_k"]["mean"][-1], abs=1e-4)
    assert float(evals[0]["eval_distinct_correct_clusters"]) == pytest.approx(
        expected["distinct_correct_clusters"]["mean"], abs=1e-4
    )


def warm_start_held_out(tmp_path: Path, num_samples: int, problems: int) -> dict:
    """The goldbach warm start's held-out summary, its episodes played in this process as the recipe's evaluation
    plays them (seed 0, 128 tokens, one tool round, majority vote over plans)."""
    args = PolyEPOConfig(
        output_dir=str(tmp_path / "here"), max_completion_length=128, max_tool_calling_iterations=1, use_cpu=True
    )
    table = [dict(row) for row in goldbach_rows("test")][:problems]
    trainer = PolyEPOTrainer(
        model=warm_start_model(),
        args=args,
        train_dataset=goldbach_rows("test"),
        environment_factory=GoldbachEnvironment,
        judge=plan_judge,
    )
    settings = SamplingSettings(num_samples=num_samples, max_new_tokens=128, seed=0)
    sampler = EpisodeSampler.for_trainer(trainer, settings, Agent(GoldbachEnvironment, [], 1))
    scorer = Scorer([], judge=plan_judge, vote_answer="plan")
    return summarize(episode_metrics(sampler, table, list(range(problems)), scorer), 1)


def rows_file(tmp_path: Path, n: int = 8) -> Path:
    environments = ["counter", "lamp"] * (n // 2)
    rows = [
        {
            "problem": f"Reach {i}.",
            "target": i,
            "note": f"note-{i}",
            "unused": "x",
            "environment": environments[i],
        }
        for i in range(n)
    ]
    path = tmp_path / "rows.jsonl"
    path.write_text("\n".join(json.dumps(row) for row in rows))
    return path


def agent_recipe(tmp_path: Path, model_dir: Path, **keys) -> list[str]:
    recipe = {
        "model_name_or_path": str(model_dir),
        "dataset_name": str(rows_file(tmp_path)),
        "answer_column": None,
        "instruction": "",
        "environment_factory": {"counter": "agents:Counter", "lamp": "agents:Lamp"},
        "tools": ["agents:shout"],
        "reward_funcs": ["agents:note_reward"],
        "keep_columns": ["note"],
        "judge": "embedding",
        "num_generations": 4,
        "set_size": 2,
        "per_device_train_batch_size": 8,
        "max_completion_length": 8,
        "max_steps": 1,
        "use_cpu": True,
        "bf16": False,
        "activation_checkpointing": False,
        "report_to": "none",
        "save_strategy": "no",
        "output_dir": str(tmp_path / "out"),
        **keys,
    }
    path = tmp_path / "agent.yaml"
    path.write_text(yaml.safe_dump(recipe))
    return ["--config", str(path)]


def test_a_recipe_names_its_environments_tools_and_the_columns_they_read(tmp_path, model_dir, capsys):
    Lamp.resets.clear()
    NOTES_SEEN.clear()
    trainer = main(agent_recipe(tmp_path, model_dir))
    assert trainer.state.global_step == 1
    # the tools the model is offered: the standalone one and each environment's methods
    assert {tool.__name__ for tool in trainer.tools} == {"shout", "add", "double", "switch"}
    assert set(trainer.environment_factories) == {"counter", "lamp"}
    # reset got the lamp rows' columns: its parameter (target), the kept note; not the unused column
    assert Lamp.resets and all(reset["target"] % 2 == 1 for reset in Lamp.resets)
    assert all(reset["note"] == f"note-{reset['target']}" and "unused" not in reset for reset in Lamp.resets)
    assert "environment" not in Lamp.resets[0]  # TRL's control field, not passed on
    # the reward function got the kept column, row by row
    assert len(NOTES_SEEN) == 8 and set(NOTES_SEEN) <= {f"note-{i}" for i in range(8)}


def run_dry(argv: list[str], capsys) -> str:
    with pytest.raises(SystemExit) as stop:
        main([*argv, "--dry_run", "true"])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, err[-600:]
    return errors[0]


GOLDBACH = "poly_epo_trl.tasks.goldbach_agent:GoldbachEnvironment"


@pytest.mark.parametrize(
    ("keys", "words"),
    [
        (
            {"environment_factory": "agents:Nowhere"},
            ["environment_factory", "agents:Nowhere", "could not be imported"],
        ),
        ({"environment_factory": "lamps"}, ["Unknown environment 'lamps'", "goldbach_agent", "package.module:Class"]),
        ({"environment_factory": "agents:shout"}, ["environment_factory", "shout() failed"]),
        ({"environment_factory": "agents:NoReset"}, ["no reset method"]),
        ({"environment_factory": {}}, ["environment_factory", "empty"]),
        ({"environment_factory": GOLDBACH}, ["reset needs 'total'", "not a dataset column"]),
        ({"tools": ["agents:mumble"]}, ["tools", "mumble", "cannot be described", "docstring"]),
        ({"environment_factory": "agents:Counter", "reward_funcs": []}, []),  # Counter owns its reward: accepted
        ({"environment_factory": "agents:Dial", "reward_funcs": []}, ["no get_reward"]),
        ({"chat_format": False}, ["chat_format: true"]),
        (
            {"eval_dataset_name": "builtin:sum_pair", "eval_steps": 1},
            ["eval_dataset_name='builtin:sum_pair'", "rows lack", "'target'", "'note'", "'environment'"],
        ),
        ({"keep_columns": ["colour"]}, ["keep_columns", "'colour'"]),
        ({"model_name_or_path": "builtin:demo"}, ["chat template cannot render tool calls"]),
    ],
    ids=lambda value: "-".join(value) if isinstance(value, dict) else None,
)
def test_a_bad_agent_recipe_stops_at_the_door(keys, words, tmp_path, model_dir, capsys):
    argv = agent_recipe(tmp_path, model_dir, **keys)
    if not words:
        assert main([*argv, "--dry_run", "true"]).agent["environment_factory"] is not None
        return
    message = run_dry(argv, capsys)
    assert all(word in message for word in words), message


def test_an_environment_mistake_is_named_as_such_without_tools(tmp_path, model_dir, capsys):
    argv = agent_recipe(tmp_path, model_dir, environment_factory="agents:NoReset", tools=None)
    assert run_dry(argv, capsys).startswith("error: environment_factory: agents:NoReset has no reset method")


def test_several_environments_need_the_environment_column(tmp_path, model_dir, capsys):
    argv = agent_recipe(tmp_path, model_dir)
    rows = [json.loads(line) for line in rows_file(tmp_path).read_text().splitlines()]
    path = tmp_path / "plain.jsonl"
    path.write_text("\n".join(json.dumps({k: v for k, v in r.items() if k != "environment"}) for r in rows))
    message = run_dry([*argv, "--dataset_name", str(path)], capsys)
    assert "'environment' column" in message and "['counter', 'lamp']" in message
    path.write_text(
        "\n".join(json.dumps({**r, "environment": "lmp" if i == 3 else r["environment"]}) for i, r in enumerate(rows))
    )
    message = run_dry([*argv, "--dataset_name", str(path)], capsys)
    assert "['lmp']" in message and "it names ['counter', 'lamp']" in message
