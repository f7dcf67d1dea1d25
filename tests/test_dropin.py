"""A drop-in where people already train: the trainers take a script's own GRPOConfig, TRL's own GRPO script runs with
only its import changed, and a recipe written for `trl grpo` runs through `poly-epo train`."""

import difflib
import json
import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import trl
from agents import save_tool_model
from bubblewrap import needs_bwrap
from tiny import SMALL, save_tiny_model, toy_dataset
from transformers import AutoTokenizer, Qwen3Config, Qwen3ForSequenceClassification
from trl import GRPOConfig
from trl_recipes import conversational_math, trl_recipe, write_yaml

from poly_epo_trl import GRPODivTrainer, PolyEPOConfig, PolyEPOTrainer
from poly_epo_trl.advantages import scale_advantages
from poly_epo_trl.commands.train import main
from poly_epo_trl.tasks.sum_pair import sum_pair_reward

ROOT = Path(__file__).resolve().parents[1]
TRL_SCRIPT = Path(trl.__file__).parent / "scripts" / "grpo.py"
TRL_IMPORT = "from trl import GRPOTrainer, get_dataset, get_peft_config, get_quantization_config"
SWAPPED_IMPORT = (
    "from trl import get_dataset, get_peft_config, get_quantization_config; "
    "from poly_epo_trl import PolyEPOTrainer as GRPOTrainer"
)
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "WANDB_MODE": "disabled"}
GRPO_SMALL = {key: value for key, value in SMALL.items() if key != "set_size"}  # a plain GRPOConfig's share
QUESTIONS = {"a": [(1, 2), (3, 4), (5, 6), (2, 2)], "b": [(7, 1), (9, 9), (4, 4), (6, 2)]}


@pytest.fixture(scope="module")
def chat_model(tmp_path_factory) -> Path:
    """A tiny chat model: byte-level tokens and Qwen3's chat template, random weights."""
    return save_tool_model(tmp_path_factory.mktemp("chat") / "model")


# ------------------------------------------------------------------------------------------ a script's GRPOConfig


def test_a_scripts_grpo_config_is_kept_and_the_set_settings_come_from_keywords(tmp_path, caplog):
    model = save_tiny_model(tmp_path / "model")
    small = {k: v for k, v in SMALL.items() if k != "set_size"}
    args = GRPOConfig(output_dir=str(tmp_path / "out"), **small, bf16=False, max_completion_length=8, beta=0.01)
    with caplog.at_level(logging.WARNING):
        trainer = PolyEPOTrainer(
            model=str(model), reward_funcs=sum_pair_reward, args=args, train_dataset=toy_dataset(), set_size=3
        )
    assert trainer.args is args and (args.loss_type, args.scale_rewards, args.beta) == ("dapo", "group", 0.01)
    assert trainer.settings.set_size == 3 and trainer.settings.judge == "answer"  # the judge default of args=None
    departures = [r.getMessage() for r in caplog.records if "differ from the paper's" in r.getMessage()]
    assert len(departures) == 1
    for said in ("loss_type='dapo'", "scale_rewards='group'", "beta=0.01", "epsilon_high=None"):
        assert said in departures[0]
    trainer.train()
    logged = trainer.state.log_history[0]
    assert "poly_epo/set_score" in logged and "judge/groups" in logged
    # the set advantages, divided by their group's std as the script's scale_rewards='group' asks
    batch = trainer.last_set_batch
    unscaled, _ = trainer.method.fn(batch, trainer.settings)
    expected = scale_advantages(unscaled, "group", ~torch.isnan(batch.rewards))
    torch.testing.assert_close(batch.advantages, expected)


def test_keywords_are_checked_as_config_fields(tmp_path):
    model = save_tiny_model(tmp_path / "model")
    small = {k: v for k, v in SMALL.items() if k != "set_size"}
    args = GRPOConfig(output_dir=str(tmp_path / "out"), **small, bf16=False)
    common = {"model": str(model), "reward_funcs": sum_pair_reward, "train_dataset": toy_dataset()}
    with pytest.raises(ValueError, match="set_size=8 with num_generations=8"):
        PolyEPOTrainer(**common, args=args, set_size=8)
    with pytest.raises(ValueError, match="set_size='4' is str: it must be int"):
        PolyEPOTrainer(**common, args=args, set_size="4")
    with pytest.raises(TypeError, match="set them on the PolyEPOConfig"):
        PolyEPOTrainer(**common, args=PolyEPOConfig(**{**SMALL, "output_dir": str(tmp_path / "o")}), set_size=3)
    with pytest.raises(ValueError, match="multi_objective_aggregation"):
        normalize = GRPOConfig(
            **{**small, "output_dir": str(tmp_path / "o")}, multi_objective_aggregation="normalize_then_sum"
        )
        PolyEPOTrainer(**common, args=normalize)
    div = GRPODivTrainer(**common, args=args, diversity_coef=0.25, judge="distinct")
    assert div.args is args and div.settings.diversity_coef == 0.25 and div.reward_weights[-1].item() == 0.25


# ----------------------------------------------------------------------------------- TRL's own GRPO script, swapped


def swapped_script(tmp_path: Path) -> Path:
    """The installed `trl/scripts/grpo.py` with only its import line changed."""
    original = TRL_SCRIPT.read_text()
    assert original.count(TRL_IMPORT) == 1, "TRL's script changed its import line: update TRL_IMPORT"
    copy = tmp_path / "grpo_poly_epo.py"
    copy.write_text(original.replace(TRL_IMPORT, SWAPPED_IMPORT))
    changed = [
        line
        for line in difflib.unified_diff(original.splitlines(), copy.read_text().splitlines(), lineterm="", n=0)
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]
    assert [(line[0], line[1:].strip()) for line in changed] == [("-", TRL_IMPORT), ("+", SWAPPED_IMPORT)]
    return copy


@pytest.mark.parametrize("trainer", ["GRPOTrainer", "PolyEPOTrainer"])
@pytest.mark.slow
def test_trl_grpo_script_trains_with_the_trainer_swapped(trainer, chat_model, tmp_path):
    """TRL's GRPO script trains a chat model offline on conversational math with TRL's rewards: unchanged (the
    control), and with `PolyEPOTrainer` imported as `GRPOTrainer`, logging Poly-EPO's metrics."""
    script = TRL_SCRIPT if trainer == "GRPOTrainer" else swapped_script(tmp_path)
    data = conversational_math(tmp_path / "math", QUESTIONS["a"] + QUESTIONS["b"])
    recipe = write_yaml(tmp_path / "grpo.yaml", trl_recipe(chat_model, tmp_path / "out", dataset_name=str(data)))
    result = subprocess.run(
        [sys.executable, str(script), "--config", str(recipe)], env=ENV, capture_output=True, text=True, timeout=600
    )
    logs = result.stdout + result.stderr
    assert result.returncode == 0, logs[-4000:]
    assert "Training completed" in logs and (tmp_path / "out" / "model.safetensors").exists()
    assert "'rewards/accuracy_reward/mean'" in logs and "'rewards/think_format_reward/mean'" in logs
    if trainer == "GRPOTrainer":
        assert "poly_epo/" not in logs
    else:
        assert logs.count("'poly_epo/set_score'") == 2 and logs.count("'judge/groups': '1'") == 2
        assert logs.count("differ from the paper's") == 1 and "loss_type='dapo' (paper: 'dr_grpo')" in logs


# ------------------------------------------------------------------------------ a `trl grpo` recipe, `poly-epo train`


def test_a_trl_grpo_recipe_with_a_dataset_mixture_trains_through_poly_epo_train(chat_model, tmp_path, monkeypatch):
    """TRL's keys, its reward names and a mixture of two local datasets, with `trainer` and `judge` added: the
    conversational prompts reach the trainer as they are, TRL's rewards see the `solution` column, and the run ends
    with `trainer.end()`."""
    a = conversational_math(tmp_path / "a", QUESTIONS["a"])
    b = conversational_math(tmp_path / "b", QUESTIONS["b"])
    recipe = trl_recipe(chat_model, tmp_path / "out", datasets=[{"path": str(a)}, {"path": str(b)}])
    recipe |= {"trainer": "poly_epo", "judge": "answer", "activation_checkpointing": False}
    path = write_yaml(tmp_path / "recipe.yaml", recipe)
    parts = main(["--config", str(path), "--dry_run", "true"])
    rows = list(parts.train_dataset)
    originals = [json.loads(line) for f in (a, b) for line in (f / "train.jsonl").read_text().splitlines()]
    assert [row["prompt"] for row in rows] == [row["prompt"] for row in originals]  # no instruction, no wrapping
    assert [row["solution"] for row in rows] == [row["solution"] for row in originals]
    ended = []
    monkeypatch.setattr(PolyEPOTrainer, "end", lambda self: ended.append(self), raising=False)
    trainer = main(["--config", str(path)])
    assert ended == [trainer]
    logged = trainer.state.log_history[0]
    assert "rewards/accuracy_reward/mean" in logged and "rewards/think_format_reward/mean" in logged
    assert "poly_epo/distinct_clusters" in logged


def test_trl_names_dotted_paths_and_a_reward_model(chat_model, tmp_path, monkeypatch):
    """`reward_model_name_or_path` is scored first, then the rewards by TRL's name and by dotted import path, as
    `trl grpo` orders and imports them (the working directory on the path)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "my_rewards.py").write_text(
        "def short(completions, **kwargs):\n    return [1.0 / (1 + len(str(c))) for c in completions]\n"
    )
    tokenizer = AutoTokenizer.from_pretrained(chat_model)
    config = Qwen3Config(
        vocab_size=len(tokenizer), hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
        num_key_value_heads=2, head_dim=8, num_labels=1, pad_token_id=tokenizer.pad_token_id,
    )  # fmt: skip
    Qwen3ForSequenceClassification(config).save_pretrained(tmp_path / "scorer")
    tokenizer.save_pretrained(tmp_path / "scorer")
    data = conversational_math(tmp_path / "math", QUESTIONS["a"] + QUESTIONS["b"])
    recipe = trl_recipe(chat_model, tmp_path / "out", dataset_name=str(data), max_steps=1)
    recipe |= {"reward_funcs": ["think_format_reward", "my_rewards.short"], "judge": "distinct"}
    recipe |= {"reward_model_name_or_path": str(tmp_path / "scorer"), "activation_checkpointing": False}
    trainer = main(["--config", str(write_yaml(tmp_path / "recipe.yaml", recipe))])
    assert trainer.reward_func_names == ["scorer", "think_format_reward", "short"]
    logged = trainer.state.log_history[0]
    assert {"rewards/scorer/mean", "rewards/short/mean"} <= set(logged) and logged["rewards/short/mean"] > 0


def test_conversations_keep_their_turns_and_text_prompts_stay_text(tmp_path):
    """TRL's `prompt` column as it is (text stays text, no instruction); an instruction or system prompt only when
    the recipe asks, on the last user turn; a problem column still gets the math instruction as a chat message."""
    from poly_epo_trl.data import MATH_INSTRUCTION, DatasetArguments, format_dataset, load_table

    table = tmp_path / "rows.jsonl"
    conversation = [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Yes?"},
        {"role": "user", "content": "1+1?"},
    ]
    table.write_text(json.dumps({"prompt": conversation, "solution": "2"}) + "\n")
    rows = load_table(DatasetArguments(dataset_name=str(table)), "train")
    assert format_dataset(rows, DatasetArguments())[0]["prompt"] == conversation
    asked = format_dataset(rows, DatasetArguments(instruction="Be brief.", system_prompt="You add."))[0]["prompt"]
    assert asked[0] == {"role": "system", "content": "You add."} and asked[1:3] == conversation[:2]
    assert asked[3] == {"role": "user", "content": "1+1?\n\nBe brief."}
    text = tmp_path / "text.jsonl"
    text.write_text(json.dumps({"prompt": "Q: 1+1? A:", "solution": "2"}) + "\n")
    assert (
        format_dataset(load_table(DatasetArguments(dataset_name=str(text)), "train"), DatasetArguments())[0]["prompt"]
        == "Q: 1+1? A:"
    )
    problem = tmp_path / "problem.jsonl"
    problem.write_text(json.dumps({"problem": "1+1?", "answer": 2}) + "\n")
    made = format_dataset(load_table(DatasetArguments(dataset_name=str(problem)), "train"), DatasetArguments())[0]
    assert made["prompt"] == [{"role": "user", "content": f"1+1?\n\n{MATH_INSTRUCTION}"}]


def run_cli(argv, capsys) -> str:
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 2
    err = capsys.readouterr().err
    lines = err.replace("\r", "\n").splitlines()
    errors = [i for i, line in enumerate(lines) if line.startswith("error:")]
    assert "Traceback" not in err and len(errors) == 1  # one refusal (a progress bar of datasets' aside)
    return "\n".join(lines[errors[0] :])  # with the numbered changes under it, for several found in one pass


def test_what_cannot_be_honoured_stops_at_the_door_with_one_line(chat_model, tmp_path, capsys):
    data = conversational_math(tmp_path / "math", QUESTIONS["a"])
    base = trl_recipe(chat_model, tmp_path / "out", dataset_name=str(data))
    path = write_yaml(tmp_path / "recipe.yaml", base)
    dry = ["--config", str(path), "--dry_run", "true"]
    assert "Set dataset_streaming: false" in run_cli([*dry, "--dataset_streaming", "true"], capsys)
    mixture = write_yaml(tmp_path / "mix.yaml", {**base, "datasets": [{"pth": str(data)}]})
    assert "datasets[0]: unknown keys ['pth']" in run_cli(["--config", str(mixture), "--dry_run", "true"], capsys)
    split = write_yaml(tmp_path / "split.yaml", {**base, "datasets": [{"path": str(data)}], "streaming": True})
    assert "Set streaming: false" in run_cli(["--config", str(split), "--dry_run", "true"], capsys)
    assert "chat_format: false, but the prompts" in run_cli([*dry, "--chat_format", "false"], capsys)
    err = run_cli([*dry, "--reward_funcs", "accuracy_rewards"], capsys)
    assert "Unknown reward 'accuracy_rewards'" in err and "'accuracy_reward'" in err
    err = run_cli([*dry, "--push_to_hub", "true"], capsys)
    assert "HF_HUB_OFFLINE is set" in err


@pytest.mark.slow
def test_accelerate_options_launch_accelerate(tmp_path):
    """`poly-epo train --accelerate_config <file> --num_processes 2` starts `accelerate launch` itself, as `trl grpo`
    does: two processes train the recipe."""
    out = tmp_path / "out"
    command = [sys.executable, "-m", "poly_epo_trl.cli", "train", "--accelerate_config"]
    command += [str(ROOT / "recipes/accelerate_configs/ddp.yaml"), "--num_processes", "2", "--mixed_precision", "no"]
    command += ["--config", "recipes/tiny/poly_epo/config_cpu.yaml", "--max_steps", "1", "--output_dir", str(out)]
    result = subprocess.run(command, cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=600)
    logs = result.stdout + result.stderr
    assert result.returncode == 0, logs[-3000:]
    assert "engine: DDP on 2 processes" in logs and (out / "model.safetensors").exists()
    assert re.search(r"'judge/groups': '16'", logs)  # 2 processes x 8 groups of 8 rows, judged once each


# ------------------------------------------------------------------------------------- what the run says it chose


def start_lines(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if "trains with method" in r.getMessage()]


@pytest.mark.parametrize(("group", "fitted"), [(2, 1), (3, 2), (4, 3)])
def test_a_small_group_without_a_set_size_trains_with_one_it_holds_and_says_so(tmp_path, caplog, group, fitted):
    """Where GRPOTrainer trains (TRL's grpo_vlm.py documents num_generations=2), the swap does: a GRPOConfig whose
    group cannot hold the default n = 4 trains with n = N - 1, and the start-up line says the set size was fitted;
    the judge is the default, said so with the keyword that changes it."""
    model = save_tiny_model(tmp_path / "model")
    small = {k: v for k, v in SMALL.items() if k not in ("set_size", "num_generations", "per_device_train_batch_size")}
    args = GRPOConfig(
        output_dir=str(tmp_path / "out"), **small, num_generations=group, per_device_train_batch_size=group * 2,
        bf16=False, max_completion_length=8,
    )  # fmt: skip
    with caplog.at_level(logging.WARNING):
        trainer = PolyEPOTrainer(
            model=str(model), reward_funcs=sum_pair_reward, args=args, train_dataset=toy_dataset()
        )
    assert trainer.settings.set_size == fitted
    [line] = start_lines(caplog)
    assert f"set_size {fitted} (fitted: a group of num_generations={group} cannot hold the default 4" in line, line
    assert "judge 'answer' (the default; judge=... changes it)" in line, line
    assert "method 'poly_epo' (the default; method=... changes it)" in line, line
    assert line in trainer.card_section()  # and in the model card, the run's saved account
    if group == 2:
        trainer.train()  # n = 1: the mean reward of the non-degenerate rollouts
        assert trainer.state.global_step == SMALL["max_steps"]


def test_a_set_size_given_that_the_group_cannot_hold_is_refused_naming_both_remedies(tmp_path):
    model = save_tiny_model(tmp_path / "model")
    small = {k: v for k, v in SMALL.items() if k not in ("set_size", "num_generations", "per_device_train_batch_size")}
    args = GRPOConfig(output_dir=str(tmp_path / "out"), **small, num_generations=2, per_device_train_batch_size=4)
    with pytest.raises(ValueError, match="set_size=4 with num_generations=2") as refused:
        PolyEPOTrainer(
            model=str(model), reward_funcs=sum_pair_reward, args=args, train_dataset=toy_dataset(), set_size=4
        )
    assert "set_size=..." in str(refused.value) and "PolyEPOConfig in place of GRPOConfig" in str(refused.value)


def test_a_polyepoconfig_whose_group_cannot_hold_the_default_set_size_is_fitted_and_a_given_one_refused(
    tmp_path, caplog
):
    """``PolyEPOConfig(num_generations=4)`` without a set size trains with n = 3 and says so, as a GRPOConfig does;
    ``set_size=4`` given (a recipe's ``set_size: 4``) with that group is refused, naming the remedies."""
    model = str(save_tiny_model(tmp_path / "model"))
    small = {k: v for k, v in SMALL.items() if k not in ("set_size", "num_generations", "per_device_train_batch_size")}
    config = dict(output_dir=str(tmp_path / "out"), **small, num_generations=4, per_device_train_batch_size=8)
    args = PolyEPOConfig(**config, judge="distinct")
    with caplog.at_level(logging.WARNING):
        trainer = PolyEPOTrainer(model=model, reward_funcs=sum_pair_reward, args=args, train_dataset=toy_dataset())
    assert trainer.method_settings.set_size == 3 and args.set_size == 3 and "set_size" not in args.given_settings
    [line] = start_lines(caplog)
    assert "set_size 3 (fitted: a group of num_generations=4 cannot hold the default 4; set_size=... sets it)" in line
    given = PolyEPOConfig(**config, judge="distinct", set_size=4)
    with pytest.raises(ValueError, match="set_size=4 with num_generations=4") as refused:
        PolyEPOTrainer(model=model, reward_funcs=sum_pair_reward, args=given, train_dataset=toy_dataset())
    assert "PolyEPOConfig in place of GRPOConfig" in str(refused.value) and "leave it out" in str(refused.value)


def test_the_start_up_line_says_what_the_user_gave(tmp_path, caplog):
    model = save_tiny_model(tmp_path / "model")
    small = {k: v for k, v in SMALL.items() if k != "set_size"}
    args = GRPOConfig(output_dir=str(tmp_path / "out"), **small, bf16=False, max_completion_length=8)
    with caplog.at_level(logging.WARNING):
        PolyEPOTrainer(
            model=str(model), reward_funcs=sum_pair_reward, args=args, train_dataset=toy_dataset(), set_size=3,
            judge="distinct",
        )  # fmt: skip
    [line] = start_lines(caplog)
    assert "judge 'distinct' (given: judge=)" in line and "set_size 3 (given: keyword set_size=)" in line, line


# ------------------------------------------------------------------------------------------------ the end of a run


@pytest.fixture
def hub(tmp_path):
    """The Hub's upload API, stood in for by `tests/helpers/hub_server.py` on loopback: (its endpoint, its store)."""
    store = tmp_path / "hub"
    server = subprocess.Popen(
        [sys.executable, str(ROOT / "tests" / "helpers" / "hub_server.py"), "--port", "0", "--store", str(store)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        port = int(server.stdout.readline().split()[1])
        yield f"http://127.0.0.1:{port}", store
    finally:
        server.kill()
        server.wait()


@pytest.mark.slow
def test_push_to_hub_uploads_the_model_and_a_card_naming_poly_epo_the_judge_and_the_set_size(hub, tmp_path):
    """As `trl grpo` ends a run: `push_to_hub` sends the model, its tokenizer and a model card to `hub_model_id`
    (here through real huggingface_hub calls to a stand-in of the Hub's upload API)."""
    endpoint, store = hub
    out = tmp_path / "out"
    command = [
        sys.executable,
        "-m",
        "poly_epo_trl.train",
        "--config",
        "recipes/tiny/poly_epo/config_cpu.yaml",
    ]
    command += ["--max_steps", "1", "--output_dir", str(out), "--push_to_hub", "true"]
    command += ["--hub_model_id", "lab/tiny-poly-epo"]
    env = {**ENV, "HF_HUB_OFFLINE": "0", "HF_ENDPOINT": endpoint, "HF_TOKEN": "hf_standin", "HF_HOME": str(tmp_path)}
    result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    logs = result.stdout + result.stderr
    assert result.returncode == 0, logs[-3000:]
    assert "pushed to the Hub: lab/tiny-poly-epo" in logs
    requests = [json.loads(line) for line in (store / "requests.jsonl").read_text().splitlines()]
    posts = [r for r in requests if r["method"] == "POST"]
    assert all(r["token"] == "Bearer " for r in posts)
    assert posts[0]["path"] == "/api/repos/create" and posts[0]["repo"] == "lab/tiny-poly-epo"
    final = [r for r in posts if r.get("summary") == "End of training"]
    assert len(final) == 1 and {"model.safetensors", "README.md", "tokenizer.json"} <= set(final[0]["files"])
    pushed = store / "lab" / "tiny-poly-epo"
    assert (pushed / "model.safetensors").read_bytes() == (out / "model.safetensors").read_bytes()
    card = (pushed / "README.md").read_text()
    assert "This model was trained with Poly-EPO" in card and "https://huggingface.co/papers/2604.17654" in card
    assert "## Poly-EPO settings" in card and "- Judge: `sum_pair`" in card and "sets of n = 4" in card
    assert "@article{orney2026polyepo" in card and "poly-epo" in card.split("---")[1]  # the citation, the tag
    assert "Poly-EPO: Training Exploratory Reasoning Models" in card
    authors = ("Orney", "Hamid", "Ramanujam", "Wu, Shirley", "Hu, Hengyuan", "Goodman", "Sadigh", "Finn")
    assert all(author in card for author in authors)


def test_push_to_hub_without_a_token_stops_at_the_door(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    monkeypatch.delenv("HF_TOKEN", raising=False)
    argv = ["--config", "recipes/tiny/poly_epo/config_cpu.yaml", "--dry_run", "true", "--push_to_hub", "true"]
    monkeypatch.chdir(ROOT)
    assert "no Hub token: run `hf auth login`" in run_cli([*argv, "--output_dir", str(tmp_path / "o")], capsys)


# ----------------------------------------------------------------------------------------- an open-r1 recipe, one pass

# The keys of open-r1's math demo recipe that are not ours, in a recipe of its shape (trainer and judge added; model,
# data and CPU settings as this machine needs them)
OPEN_R1_KEYS = {
    "torch_dtype": "float32",
    "dataset_prompt_column": "problem",
    "system_prompt": "Think first, then answer inside <answer></answer>.",
    "max_prompt_length": 512,
    "warmup_ratio": 0.1,
    "reward_funcs": ["accuracy", "format", "tag_count"],
    "reward_weights": [1.0, 1.0, 1.0],
}
# Each refusal of the first pass, by what it names to write
OPEN_R1_FIXES = {
    "torch_dtype": "write dtype",
    "dataset_prompt_column": "write prompt_column: <the column>, instruction: ''",
    "max_prompt_length": "max_prompt_tokens drops longer ones",
    "warmup_ratio": "write warmup_steps",
    "accuracy": "open_r1.rewards:accuracy_reward",
    "format": "open_r1.rewards:format_reward",
    "tag_count": "open_r1.rewards:tag_count_reward",
    "answer_column": "Set answer_column to one of them, or null",
    "solution": "keep_columns: [solution]",
}
# Functions of open-r1's reward signatures, in a module named as open-r1's, for the second pass's reward paths
OPEN_R1_SIGNATURES = """
def accuracy_reward(completions, solution, **kwargs):
    return [0.0] * len(completions)

def format_reward(completions, **kwargs):
    return [0.0] * len(completions)

def tag_count_reward(completions, **kwargs):
    return [0.0] * len(completions)
"""


def open_r1_recipe(chat_model: Path, tmp_path: Path) -> dict:
    rows = tmp_path / "math.jsonl"
    rows.write_text(
        "".join(json.dumps({"problem": f"{x}+{y}?", "solution": f"${x + y}$"}) + "\n" for x, y in QUESTIONS["a"])
    )
    recipe = trl_recipe(chat_model, tmp_path / "out", trainer="poly_epo", judge="answer", dataset_name=str(rows))
    return {**recipe, **OPEN_R1_KEYS, "num_generations": 4, "per_device_train_batch_size": 4}


def test_an_open_r1_recipe_meets_every_refusal_in_one_pass_and_then_runs_open_r1s_prompt(
    chat_model, tmp_path, capsys, monkeypatch
):
    recipe = open_r1_recipe(chat_model, tmp_path)
    err = run_cli(["--config", str(write_yaml(tmp_path / "open_r1.yaml", recipe)), "--dry_run", "true"], capsys)
    # the unknown keys in one change, then each reward, the answer column and the column a reward reads
    assert err.startswith("error: the recipe needs 6 changes (all found in one pass):"), err
    items = err.splitlines()[1:]
    assert len(items) == 6, err
    for name, fix in OPEN_R1_FIXES.items():
        assert any(name in item and fix in item for item in items), (name, err)

    # the second pass, with what the refusals named, is the last: open-r1's prompt, open-r1's rewards by path
    (tmp_path / "lib" / "open_r1").mkdir(parents=True)
    (tmp_path / "lib" / "open_r1" / "__init__.py").write_text("")
    (tmp_path / "lib" / "open_r1" / "rewards.py").write_text(OPEN_R1_SIGNATURES)
    monkeypatch.syspath_prepend(str(tmp_path / "lib"))
    for key in ("torch_dtype", "dataset_prompt_column", "max_prompt_length", "warmup_ratio"):
        del recipe[key]
    recipe.update(
        dtype="float32",
        prompt_column="problem",
        instruction="",
        answer_column=None,
        keep_columns=["solution"],
        warmup_steps=0.1,
        reward_funcs=[f"open_r1.rewards:{name}_reward" for name in ("accuracy", "format", "tag_count")],
    )
    parts = main(["--config", str(write_yaml(tmp_path / "fixed.yaml", recipe)), "--dry_run", "true"])
    assert parts.train_dataset[0]["prompt"] == [
        {"role": "system", "content": OPEN_R1_KEYS["system_prompt"]},
        {"role": "user", "content": "1+2?"},
    ]
    assert parts.train_dataset[0]["solution"] == "$3$"


def test_a_command_line_key_and_a_rewards_column_are_both_named_in_one_pass(chat_model, tmp_path, capsys):
    rows = tmp_path / "math.jsonl"
    rows.write_text(json.dumps({"problem": "1+1?", "answer": "2"}) + "\n")
    recipe = trl_recipe(
        chat_model, tmp_path / "out", dataset_name=str(rows), reward_funcs=["accuracy_reward"], judge="answer"
    )
    argv = ["--config", str(write_yaml(tmp_path / "r.yaml", recipe)), "--set_sise", "3", "--dry_run", "true"]
    err = run_cli(argv, capsys)
    assert "2 changes" in err and "'set_sise' (did you mean 'set_size'?)" in err, err
    assert "reward 'accuracy_reward' reads the column 'solution', which the training rows lack" in err, err


def test_conversational_prompts_for_a_tokenizer_without_a_chat_template_stop_at_the_door(tmp_path, capsys):
    model = save_tiny_model(tmp_path / "model")  # a character tokenizer, no chat template
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"problem": "1+1?", "answer": "2"}) + "\n")
    recipe = trl_recipe(model, tmp_path / "out", dataset_name=str(rows), reward_funcs=["math"], judge="answer")
    err = run_cli(["--config", str(write_yaml(tmp_path / "r.yaml", recipe)), "--dry_run", "true"], capsys)
    assert "a tokenizer without a chat template: set chat_template" in err, err
    recipe["chat_format"] = False
    assert main(["--config", str(write_yaml(tmp_path / "r.yaml", recipe)), "--dry_run", "true"]) is not None


@needs_bwrap
def test_the_code_reward_over_open_r1s_code_table_names_open_r1s_code_reward(chat_model, tmp_path, capsys):
    rows = tmp_path / "code.jsonl"
    rows.write_text(json.dumps({"problem": "Write f.", "verification_info": {"test_cases": []}}) + "\n")
    recipe = trl_recipe(chat_model, tmp_path / "out", dataset_name=str(rows), reward_funcs=["code"], judge="answer")
    err = run_cli(["--config", str(write_yaml(tmp_path / "r.yaml", recipe)), "--dry_run", "true"], capsys)
    assert "reward_funcs names 'code', which is this package's code reward" in err, err
    assert "open_r1.rewards:code_reward" in err, err


# ------------------------------------------------------------------------------------- the model's settings, the door


@pytest.mark.parametrize(
    ("keys", "said"),
    [
        (
            {"model_init_kwargs": {"min_lr": 0.0}},
            "model_init_kwargs gives ['min_lr'], which Qwen3ForCausalLM does not",
        ),
        ({"router_aux_loss_coef": 0.01}, "router_aux_loss_coef=0.01 weights a mixture-of-experts model's"),
    ],
)
def test_a_models_own_settings_it_cannot_take_stop_at_the_door_in_a_recipe_and_at_the_trainer(
    keys, said, chat_model, tmp_path, capsys
):
    data = conversational_math(tmp_path / "data", QUESTIONS["a"])
    recipe = trl_recipe(chat_model, tmp_path / "out", dataset_name=str(data), judge="answer", **keys)
    assert said in run_cli(["--config", str(write_yaml(tmp_path / "r.yaml", recipe)), "--dry_run", "true"], capsys)
    args = GRPOConfig(output_dir=str(tmp_path / "py"), **{**GRPO_SMALL, "num_generations": 4}, **keys)
    rows = [json.loads(line) for line in (data / "train.jsonl").read_text().splitlines()]
    from datasets import Dataset

    with pytest.raises(ValueError, match=re.escape(said)):
        PolyEPOTrainer(
            model=str(chat_model), reward_funcs=sum_pair_reward, args=args, train_dataset=Dataset.from_list(rows)
        )


def test_the_settings_a_model_takes_pass_the_door(chat_model, tmp_path):
    from poly_epo_trl.models.checks import loading_arguments

    # from_pretrained's own keywords, read from the installed transformers' source: fails once that reading breaks
    assert {"dtype", "attn_implementation", "device_map", "quantization_config", "revision"} <= loading_arguments()
    data = conversational_math(tmp_path / "data", QUESTIONS["a"])
    recipe = trl_recipe(
        chat_model, tmp_path / "out", dataset_name=str(data), judge="answer",
        model_init_kwargs={"use_cache": False, "attn_implementation": "eager"}, router_aux_loss_coef=0.0,
    )  # fmt: skip
    assert main(["--config", str(write_yaml(tmp_path / "r.yaml", recipe)), "--dry_run", "true"]) is not None


def test_a_reward_that_reads_conversations_over_text_prompts_stops_at_the_door(chat_model, tmp_path, capsys):
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"prompt": "What is 1+1?", "solution": "$2$"}) + "\n")
    recipe = trl_recipe(chat_model, tmp_path / "out", dataset_name=str(rows), judge="answer")
    err = run_cli(["--config", str(write_yaml(tmp_path / "r.yaml", recipe)), "--dry_run", "true"], capsys)
    for reward in ("accuracy_reward", "think_format_reward"):
        assert f"reward {reward!r} reads each completion as a conversation" in err, err
    from datasets import Dataset
    from trl.rewards import accuracy_reward

    args = GRPOConfig(output_dir=str(tmp_path / "py"), **{**GRPO_SMALL, "num_generations": 4})
    with pytest.raises(ValueError, match="Reward 'accuracy_reward' reads each completion as a conversation"):
        PolyEPOTrainer(
            model=str(chat_model), reward_funcs=accuracy_reward, args=args,
            train_dataset=Dataset.from_list([{"prompt": "1+1?", "solution": "2"}]),
        )  # fmt: skip


def test_prompts_far_past_the_models_context_stop_at_the_door_and_max_prompt_tokens_drops_them_untokenized(
    chat_model, tmp_path, capsys
):
    rows = tmp_path / "rows.jsonl"
    huge = "x " * 200_000  # 400,000 characters: past 4096 tokens of at most 16 characters each, whatever they are
    rows.write_text(
        "".join(
            json.dumps({"prompt": [{"role": "user", "content": text}], "solution": "2"}) + "\n"
            for text in (huge, "1+1?")
        )
    )
    recipe = trl_recipe(chat_model, tmp_path / "out", dataset_name=str(rows), judge="answer")
    err = run_cli(["--config", str(write_yaml(tmp_path / "r.yaml", recipe)), "--dry_run", "true"], capsys)
    assert "1 prompt is far longer than the model's context: row 0 (counting from 0) has 400000 characters" in err
    assert "max_position_embeddings=4096" in err and "max_prompt_tokens" in err, err
    recipe["max_prompt_tokens"] = 64
    parts = main(["--config", str(write_yaml(tmp_path / "r.yaml", recipe)), "--dry_run", "true"])
    assert [row["prompt"][0]["content"] for row in parts.train_dataset] == ["1+1?"]


def test_a_column_a_reward_reads_that_some_rows_leave_empty_is_refused_with_the_row(chat_model, tmp_path, capsys):
    rows = [{"prompt": [{"role": "user", "content": f"{i}+{i}?"}], "solution": f"${2 * i}$"} for i in range(4)]
    del rows[2]["solution"]
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in rows))
    recipe = trl_recipe(chat_model, tmp_path / "out", dataset_name=str(data), judge="answer")
    err = run_cli(["--config", str(write_yaml(tmp_path / "r.yaml", recipe)), "--dry_run", "true"], capsys)
    said = "reads the column 'solution', and row 2 leaves it empty (counting from 0) while others fill it"
    assert f"reward 'accuracy_reward' {said}" in err, err
    from datasets import Dataset
    from trl.rewards import accuracy_reward

    args = GRPOConfig(output_dir=str(tmp_path / "py"), **{**GRPO_SMALL, "num_generations": 4})
    with pytest.raises(ValueError, match=re.escape(f"Reward 'accuracy_reward' {said}")):
        PolyEPOTrainer(
            model=str(chat_model), reward_funcs=accuracy_reward, args=args, train_dataset=Dataset.from_list(rows)
        )


def test_a_prompt_far_past_the_models_context_stops_the_trainer_before_it_loads(chat_model, tmp_path):
    from datasets import Dataset

    rows = Dataset.from_list([{"prompt": [{"role": "user", "content": "x " * 200_000}], "solution": "2"}])
    args = GRPOConfig(output_dir=str(tmp_path / "py"), **{**GRPO_SMALL, "num_generations": 4})
    with pytest.raises(
        ValueError, match=r"1 prompt is far longer than the model's context: row 0 \(counting from 0\)"
    ):
        PolyEPOTrainer(model=str(chat_model), reward_funcs=sum_pair_reward, args=args, train_dataset=rows)


def test_a_streamed_dataset_passes_the_door_unread(chat_model, tmp_path):
    """An IterableDataset (a stream, which GRPOTrainer takes) is not read ahead by the door's row checks: the trainer
    is built, as GRPOTrainer builds it."""
    from datasets import Dataset

    rows = Dataset.from_list([{"prompt": f"{i}+{i}=", "solution": str(2 * i)} for i in range(8)]).to_iterable_dataset()
    settings = {**GRPO_SMALL, "num_generations": 4, "accelerator_config": {"dispatch_batches": False}}
    args = GRPOConfig(output_dir=str(tmp_path / "py"), **settings)
    trainer = PolyEPOTrainer(model=str(chat_model), reward_funcs=sum_pair_reward, args=args, train_dataset=rows)
    assert trainer.train_dataset is rows
