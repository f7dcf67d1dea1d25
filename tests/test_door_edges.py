"""The door's edges: what a TRL user's recipes, datasets and scripts can hold is stopped before the model loads, with
one line naming the field and the fix, or honoured; never silently changed. Each case below asserts its outcome."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from agents import save_tool_model
from datasets import Dataset
from tiny import SMALL, save_tiny_model, toy_dataset
from trl import GRPOConfig
from trl_recipes import conversational_math, trl_recipe, write_yaml

from poly_epo_trl import GRPODivTrainer, PolyEPOTrainer
from poly_epo_trl.commands import launch
from poly_epo_trl.commands.cli import main as cli
from poly_epo_trl.commands.train import main, parse
from poly_epo_trl.data.rows import checked_prompts
from poly_epo_trl.tasks.sum_pair import sum_pair_reward
from poly_epo_trl.trainer import DrGRPOTrainer

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "WANDB_MODE": "disabled"}
NOT_LOADED = "no/such-model"  # a Hub id that cannot load: an error raised with it came before the model loads
QUESTION = [{"role": "user", "content": "What is 1 + 2?"}]


@pytest.fixture(scope="module")
def chat_model(tmp_path_factory) -> Path:
    return save_tool_model(tmp_path_factory.mktemp("chat") / "model")


def stops(argv: list[str], capsys) -> str:
    """``poly-epo train argv``: it stops with exit code 2 and one line, no traceback; the line."""
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 2
    err = capsys.readouterr().err
    errors = [line for line in err.replace("\r", "\n").splitlines() if line.startswith("error:")]
    assert "Traceback" not in err and len(errors) == 1, err[-2000:]
    return errors[0]


def rows_file(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def dry(chat_model: Path, tmp_path: Path, **keys) -> list[str]:
    recipe = trl_recipe(chat_model, tmp_path / "out", **{"reward_funcs": ["think_format_reward"], **keys})
    recipe |= {"judge": "answer", "activation_checkpointing": False}
    return ["--config", str(write_yaml(tmp_path / "recipe.yaml", recipe)), "--dry_run", "true"]


def trainer_kwargs(tmp_path: Path, **overrides) -> dict:
    small = {k: v for k, v in SMALL.items() if k != "set_size"}
    args = GRPOConfig(output_dir=str(tmp_path / "out"), **small, bf16=False, max_completion_length=6)
    return {"model": NOT_LOADED, "reward_funcs": sum_pair_reward, "args": args, "train_dataset": toy_dataset()} | (
        overrides
    )


# ------------------------------------------------------------------------------------------- rows, where read


def test_sharegpt_rows_are_converted_not_stringified(chat_model, tmp_path):
    sharegpt = [{"from": "system", "value": "Add."}, {"from": "human", "value": "What is 1 + 2?"}]
    data = rows_file(tmp_path / "share.jsonl", [{"prompt": sharegpt}] * 4)
    parts = main(dry(chat_model, tmp_path, dataset_name=str(data)))
    assert parts.train_dataset[0]["prompt"] == [
        {"role": "system", "content": "Add."},
        {"role": "user", "content": "What is 1 + 2?"},
    ]
    converted = checked_prompts([sharegpt], "prompt")
    assert converted[0][1] == {"role": "user", "content": "What is 1 + 2?"}


@pytest.mark.parametrize(
    ("prompt", "said"),
    [
        ([{"role": "usr", "content": "hi"}], "row 0, column 'prompt', message 0: role 'usr' is not one"),
        ([{"role": "user"}], "row 0, column 'prompt', message 0 (user): no content"),
        ([{"role": "user", "content": 7}], "message 0 (user): 7; a message's content is a string"),
        ("", "row 0, column 'prompt': the prompt is empty"),
        (["not", "messages"], "is no prompt"),
        ([{"from": "alien", "value": "hi"}], "ShareGPT role 'alien' has no chat role"),
    ],
)
def test_a_bad_conversation_stops_naming_the_row_and_the_field(chat_model, tmp_path, capsys, prompt, said):
    data = rows_file(tmp_path / "bad.jsonl", [{"prompt": prompt}])
    assert said in stops(dry(chat_model, tmp_path, dataset_name=str(data)), capsys)


def test_text_and_conversation_rows_in_one_column_stop_at_the_door(chat_model, tmp_path, capsys):
    data = rows_file(tmp_path / "mixed.jsonl", [{"prompt": "What is 1 + 2?"}, {"prompt": QUESTION}])
    err = stops(dry(chat_model, tmp_path, dataset_name=str(data)), capsys)
    assert "row 1, column 'prompt' is conversation, row 0 is text" in err


def test_the_trainers_check_rows_too_before_the_model_loads(tmp_path):
    bad = Dataset.from_dict({"prompt": [[{"role": "usr", "content": "S=12:"}]]})
    with pytest.raises(ValueError, match="train_dataset: row 0, column 'prompt', message 0: role 'usr'"):
        PolyEPOTrainer(**trainer_kwargs(tmp_path, train_dataset=bad), set_size=3)


def test_poly_epo_train_checks_its_rows_once_at_its_door_and_a_python_trainer_itself(tmp_path, monkeypatch):
    """``poly-epo train`` checks the rows before anything loads and builds its trainer with ``check_inputs=False``:
    the prompt column is read by the door, not again by the trainer; a trainer built in Python checks its
    rows itself."""
    import poly_epo_trl.data.prompts as door_rows
    import poly_epo_trl.trainer.inputs as trainer_rows

    reads = {"door": 0, "trainer": 0}

    def counted(where: str):
        def check(*args, **kwargs):
            reads[where] += 1
            return checked_prompts(*args, **kwargs)

        return check

    monkeypatch.setattr(door_rows, "checked_prompts", counted("door"))
    monkeypatch.setattr(trainer_rows, "checked_prompts", counted("trainer"))
    recipe = ["--config", "recipes/tiny/poly_epo/config_cpu.yaml", "--max_steps", "1", "--save_strategy", "no"]
    main([*recipe, "--output_dir", str(tmp_path / "cli"), "--report_to", "none"])
    assert reads["door"] >= 1 and reads["trainer"] == 0, reads
    with pytest.raises(OSError):  # NOT_LOADED: the rows were checked, then the model could not load
        PolyEPOTrainer(**trainer_kwargs(tmp_path), set_size=3)
    assert reads["trainer"] == 1


def test_a_reward_that_reads_a_missing_column_stops_at_the_door(chat_model, tmp_path, capsys):
    data = rows_file(tmp_path / "nosolution.jsonl", [{"prompt": QUESTION}] * 4)
    err = stops(dry(chat_model, tmp_path, dataset_name=str(data), reward_funcs=["accuracy_reward"]), capsys)
    assert "reward 'accuracy_reward' reads the column 'solution', which the training rows lack" in err

    def needs_answer(completions, answer, **kwargs):
        return [0.0] * len(completions)

    with pytest.raises(ValueError, match="Reward 'needs_answer' reads the column 'answer', which train_dataset lacks"):
        PolyEPOTrainer(**trainer_kwargs(tmp_path, reward_funcs=needs_answer), set_size=3)


def test_a_mixture_whose_datasets_differ_in_the_columns_the_rewards_read_stops(chat_model, tmp_path, capsys):
    a = conversational_math(tmp_path / "a", [(1, 2), (3, 4)])
    b = tmp_path / "b"
    b.mkdir()
    rows_file(b / "train.jsonl", [{"prompt": QUESTION, "answer": "3"}] * 2)
    argv = dry(chat_model, tmp_path, datasets=[{"path": str(a)}, {"path": str(b)}], reward_funcs=["accuracy_reward"])
    err = stops(argv, capsys)
    assert "datasets[1]" in err and "has no column 'solution', which reward 'accuracy_reward' reads" in err


def test_an_empty_mixture_file_names_its_entry_and_the_cause(chat_model, tmp_path, capsys):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    err = stops(dry(chat_model, tmp_path, datasets=[{"path": "json", "data_files": str(empty)}]), capsys)
    assert f"datasets[0] (path 'json'): {empty} is empty" in err


def test_dataset_name_beside_a_mixture_is_said_as_trl_grpo_says_it(chat_model, tmp_path, caplog):
    a = conversational_math(tmp_path / "a", [(1, 2), (3, 4)])
    with caplog.at_level(logging.WARNING):
        parts = main(dry(chat_model, tmp_path, datasets=[{"path": str(a)}], dataset_name="ignored/by-trl"))
    assert len(parts.train_dataset) == 2
    assert any("Both `datasets` and `dataset_name` are provided" in r.getMessage() for r in caplog.records)


def test_dataset_config_on_a_local_folder_stops(chat_model, tmp_path, capsys):
    a = conversational_math(tmp_path / "a", [(1, 2)])
    err = stops(dry(chat_model, tmp_path, dataset_name=str(a), dataset_config="main"), capsys)
    assert "dataset_config='main' names a configuration of a Hub dataset" in err and "drop dataset_config" in err


# ---------------------------------------------------------------------------------------------- recipes at the door


def test_a_key_set_twice_in_a_recipe_stops(chat_model, tmp_path, capsys):
    argv = dry(chat_model, tmp_path, dataset_name=str(conversational_math(tmp_path / "a", [(1, 2)])))
    recipe = Path(argv[1])
    recipe.write_text(recipe.read_text() + "max_steps: 9\n")
    assert "The recipe sets 'max_steps' twice (lines" in stops(argv, capsys)


def test_one_value_of_a_trl_list_field_is_taken_as_trl_takes_it(chat_model, tmp_path):
    """``lora_target_modules: all-linear`` (PEFT's shorthand; TRL's parser gives one command-line value of a list field
    as a string too) reaches the model config as TRL passes it; a list of several stays a list."""
    from poly_epo_trl.commands.train import parse

    argv = dry(chat_model, tmp_path, dataset_name=str(conversational_math(tmp_path / "a", [(1, 2)])))
    _, _, model_args = parse([*argv, "--use_peft", "true", "--lora_target_modules", "all-linear"])
    assert model_args.lora_target_modules == "all-linear"
    _, _, model_args = parse([*argv, "--lora_target_modules", "q_proj", "v_proj"])
    assert model_args.lora_target_modules == ["q_proj", "v_proj"]


def test_set_size_null_is_unset_and_a_null_of_a_field_without_none_names_the_field(chat_model, tmp_path, capsys):
    """``set_size: null`` leaves the set size to the method (its default, fitted to the group), as leaving the key
    out does; ``temperature: null`` (a field that takes no None) names the field."""
    argv = dry(chat_model, tmp_path, dataset_name=str(conversational_math(tmp_path / "a", [(1, 2)])))
    recipe = Path(argv[1])
    text = recipe.read_text()
    recipe.write_text(text + "set_size: null\n")
    training_args = parse(argv)[1]
    assert training_args.set_size == 4 and "set_size" not in training_args.given_settings
    recipe.write_text(text + "temperature: null\n")
    assert "temperature=None: it must be float (drop the key for its default)" in stops(argv, capsys)


def test_a_missing_resume_checkpoint_and_an_output_dir_that_cannot_be_made_stop_in_one_line(
    chat_model, tmp_path, capsys
):
    data = str(conversational_math(tmp_path / "a", [(1, 2)] * 8))
    argv = dry(chat_model, tmp_path, dataset_name=data)[:2]
    err = stops([*argv, "--resume_from_checkpoint", str(tmp_path / "nope")], capsys)
    assert f"resume_from_checkpoint={str(tmp_path / 'nope')!r}: no such folder" in err
    err = stops([*argv, "--output_dir", "/proc/poly-epo/out"], capsys)
    assert "output_dir='/proc/poly-epo/out' cannot be created" in err


def test_an_uncached_hub_model_offline_stops_in_one_line(chat_model, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    data = str(conversational_math(tmp_path / "a", [(1, 2)] * 8))
    argv = dry(chat_model, tmp_path, dataset_name=data)[:2]
    err = stops([*argv, "--model_name_or_path", "poly-epo-tests/never-downloaded"], capsys)
    assert "model_name_or_path='poly-epo-tests/never-downloaded' is not in the Hub cache" in err


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        (["--num_processes", "0"], "--num_processes 0: the number of processes to launch, at least 1"),
        (["--accelerate_config", "LIST"], "not a mapping of accelerate's keys"),
        (["--accelerate_config", "zero9"], "zero9 is neither a file nor a valid config"),
    ],
)
def test_launch_options_that_accelerate_would_stop_on_stop_in_one_line(tmp_path, extra, said, capsys):
    listed = tmp_path / "list.yaml"
    listed.write_text(yaml.safe_dump(["compute_environment", "LOCAL_MACHINE"]))
    extra = [str(listed) if e == "LIST" else e for e in extra]
    with pytest.raises(SystemExit) as stop:
        cli(["train", *extra, "--config", "x.yaml"])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and said in err and "Traceback" not in err, err[-2000:]


def test_the_launchers_options_that_are_recipe_keys_are_the_recipes():
    """``launch.RECIPE_KEYS``, which the launcher leaves to the recipe without importing it, is every option both
    ``accelerate launch`` and the recipe's configs have."""
    from dataclasses import fields

    from accelerate.commands.launch import launch_command_parser
    from trl import ModelConfig

    from poly_epo_trl.assembly import ScriptArguments
    from poly_epo_trl.trainer import PolyEPOConfig

    recipe = {f"--{f.name}" for cls in (ScriptArguments, PolyEPOConfig, ModelConfig) for f in fields(cls)}
    launcher = {o for action in launch_command_parser()._actions for o in action.option_strings}
    assert launcher & recipe == set(launch.RECIPE_KEYS)
    _, recipe_args = launch.split_launch_args(["--debug", "underflow_overflow", "--num_processes", "2"])
    assert recipe_args == ["--debug", "underflow_overflow"]


def test_poly_epo_train_hands_over_to_the_launcher_before_it_imports_the_training_stack():
    """The launching process imports accelerate's launcher, not TRL's trainer or the recipe's configs (the processes
    it starts do): here accelerate's ``launch_command`` is swapped for one that reports what was imported."""
    code = (
        "import sys, accelerate.commands.launch as a\n"
        "def report(args):\n"
        "    print('module:', args.module, args.training_script, 'num_processes:', args.num_processes)\n"
        "    print('loaded:', sorted(m for m in ('trl.trainer.grpo_trainer', 'poly_epo_trl.trainer',"
        " 'poly_epo_trl.assembly') if m in sys.modules))\n"
        "a.launch_command = report\n"
        "from poly_epo_trl.commands.cli import main\n"
        "main(['train', '--num_processes', '2', '--config', 'recipes/tiny/poly_epo/config_cpu.yaml'])\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "module: True poly_epo_trl.train num_processes: 2" in done.stdout, done.stdout
    assert "loaded: []" in done.stdout, done.stdout


# ------------------------------------------------------------------------------------ a script's config, keywords


@dataclass
class MyConfig(GRPOConfig):
    """A script's own GRPOConfig subclass with Poly-EPO settings as fields."""

    set_size: int = 3
    judge: str = "distinct"


def test_a_config_subclass_s_settings_are_honoured_and_a_disagreeing_keyword_is_refused(tmp_path):
    small = {k: v for k, v in SMALL.items() if k != "set_size"}
    args = MyConfig(output_dir=str(tmp_path / "out"), **small, bf16=False, max_completion_length=6)
    model = str(save_tiny_model(tmp_path / "model"))
    trainer = PolyEPOTrainer(model=model, reward_funcs=sum_pair_reward, args=args, train_dataset=toy_dataset())
    assert trainer.settings.set_size == 3 and trainer.settings.judge == "distinct"
    assert trainer.judge.name == "distinct"
    same = PolyEPOTrainer(
        model=model, reward_funcs=sum_pair_reward, args=args, train_dataset=toy_dataset(), set_size=3
    )
    assert same.settings.set_size == 3
    with pytest.raises(TypeError, match=r"set_size=2 as a keyword, and MyConfig.set_size=3: give each setting once"):
        PolyEPOTrainer(**trainer_kwargs(tmp_path, args=args), set_size=2)
    with pytest.raises(TypeError, match=r"judge='answer' as a keyword, and MyConfig.judge='distinct'"):
        PolyEPOTrainer(**trainer_kwargs(tmp_path, args=args), judge="answer")


def test_a_config_subclass_overriding_check_with_keeps_working(tmp_path):
    """``PolyEPOConfig.check_with(self, args)`` keeps its signature: a subclass that overrides it to pick its set
    size (as TRL-suite harnesses and scripts do) trains on, its set size the one it picked."""
    from poly_epo_trl import PolyEPOConfig

    class Picking(PolyEPOConfig):
        def check_with(self, args) -> None:
            self.set_size = args.num_generations - 1
            super().check_with(args)

    small = {k: v for k, v in SMALL.items() if k != "set_size"}
    args = Picking(
        output_dir=str(tmp_path / "out"), **small, bf16=False, max_completion_length=6, set_size=99, judge="distinct"
    )
    model = str(save_tiny_model(tmp_path / "model"))
    trainer = PolyEPOTrainer(model=model, reward_funcs=sum_pair_reward, args=args, train_dataset=toy_dataset())
    assert trainer.settings.set_size == SMALL["num_generations"] - 1


@pytest.mark.parametrize(
    ("keywords", "error", "said"),
    [
        ({"set_sise": 3}, TypeError, "unexpected keyword argument 'set_sise'. Did you mean 'set_size'?"),
        ({"temperature": 0.5}, TypeError, "temperature is a GRPO setting; set it on the config"),
        ({"judge": "answr"}, ValueError, "Unknown judge spec 'answr'"),
        ({"judge": 123}, TypeError, "judge must be a ClusteringJudge, a callable or a spec string, got int"),
    ],
)
def test_keywords_the_trainer_cannot_use_stop_before_the_model_loads(tmp_path, keywords, error, said):
    with pytest.raises(error, match=said):
        PolyEPOTrainer(**trainer_kwargs(tmp_path), set_size=3, **keywords)


@pytest.mark.slow
def test_an_unreachable_judge_given_in_python_is_probed_before_the_model_loads(tmp_path):
    import socket
    import time

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    began = time.monotonic()
    with pytest.raises(ValueError, match="The judge did not answer a probe group within 15s"):
        PolyEPOTrainer(**trainer_kwargs(tmp_path), set_size=3, judge=f"openai:http://127.0.0.1:{port}/v1/m")
    assert time.monotonic() - began < 30


def test_a_setting_the_method_does_not_use_is_said_once_and_never_refused(tmp_path, caplog):
    model = str(save_tiny_model(tmp_path / "model"))
    with caplog.at_level(logging.WARNING):
        trainer = PolyEPOTrainer(**trainer_kwargs(tmp_path, model=model), set_size=3, diversity_coef=0.3)
    said = [r.getMessage() for r in caplog.records if "unused" in r.getMessage()]
    assert len(said) == 1 and "diversity_coef=0.3 is unused" in said[0] and trainer.settings.diversity_coef == 0.3


def test_several_unused_settings_are_said_in_one_sentence(caplog):
    from poly_epo_trl.methods import METHODS
    from poly_epo_trl.trainer.config import say_unused

    with caplog.at_level(logging.WARNING):
        say_unused("PolyEPOTrainer", METHODS.get("grpo"), {"set_size": 4, "diversity_coef": 0.5, "seed": 1})
    said = [r.getMessage() for r in caplog.records]
    assert said == [
        "PolyEPOTrainer (method 'grpo'): set_size=4 and diversity_coef=0.5 are unused: "
        "the method reads no settings of its own."
    ]


@pytest.mark.parametrize("cls", [DrGRPOTrainer, GRPODivTrainer])
@pytest.mark.parametrize("generations", [2, 4])
def test_the_baselines_train_at_any_group_size_their_set_size_unused(tmp_path, cls, generations, caplog):
    small = {**SMALL, "num_generations": generations, "per_device_train_batch_size": generations}
    small.pop("set_size")
    args = GRPOConfig(output_dir=str(tmp_path / "out"), **small, bf16=False, max_completion_length=6)
    model = str(save_tiny_model(tmp_path / "model"))
    with caplog.at_level(logging.WARNING):
        trainer = cls(model=model, reward_funcs=sum_pair_reward, args=args, train_dataset=toy_dataset(), set_size=4)
        trainer.train()
    assert trainer.state.global_step == 2
    assert any("set_size=4 is unused" in r.getMessage() for r in caplog.records)


# ------------------------------------------------------------------------------------------- rewards, every step


@pytest.mark.parametrize(
    ("returned", "said"),
    [
        ("text", r"Reward 'bad' returned 'x' \(str\) for a completion"),
        ("nan", "Reward 'bad' returned NaN for every completion of the step"),
        ("short", "Reward 'bad' returned 1 rewards for 8 completions"),
    ],
)
def test_a_reward_returning_the_wrong_thing_is_named_with_what_it_returned(tmp_path, returned, said):
    def bad(completions, **kwargs):
        return {"text": ["x"] * len(completions), "nan": [float("nan")] * len(completions), "short": [1.0]}[returned]

    model = str(save_tiny_model(tmp_path / "model"))
    trainer = PolyEPOTrainer(**trainer_kwargs(tmp_path, model=model, reward_funcs=[sum_pair_reward, bad]), set_size=3)
    with pytest.raises(ValueError, match=said):
        trainer.train()


# ------------------------------------------------------------------------------------------------- a run's identity


def run_recipe(tmp_path: Path, trainer: str, steps: int) -> list[str]:
    argv = ["--config", "recipes/tiny/poly_epo/config_cpu.yaml", "--trainer", trainer, "--max_steps", str(steps)]
    return [*argv, "--save_strategy", "steps", "--save_steps", "2", "--output_dir", str(tmp_path / "run")]


def test_a_run_never_resumes_or_skips_onto_another_methods_checkpoint(tmp_path, capsys):
    main(run_recipe(tmp_path, "grpo", 2))
    checkpoint = tmp_path / "run" / "checkpoint-2"
    assert json.loads((checkpoint / "run_identity.json").read_text())["trainer"] == "grpo"
    for steps in (2, 4):  # 2: it would skip as finished; 4: it would resume
        err = stops(run_recipe(tmp_path, "poly_epo", steps), capsys)
        assert f"{checkpoint} was written by another run (trainer 'grpo')" in err
        assert "trainer 'grpo' there, 'poly_epo' here" in err and "overwrite_output_dir: true" in err
    trainer = main([*run_recipe(tmp_path, "poly_epo", 2), "--overwrite_output_dir", "true"])
    assert trainer.state.global_step == 2 and trainer.method.name == "poly_epo"
    with pytest.raises(ValueError, match="was written by another run"):
        DrGRPOTrainer(
            model=str(tmp_path / "run"), reward_funcs=sum_pair_reward, args=trainer.args, train_dataset=toy_dataset()
        ).train(resume_from_checkpoint=str(tmp_path / "run" / "checkpoint-2"))


@pytest.mark.slow
def test_under_two_processes_both_stop_with_the_same_line(tmp_path):
    launch = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "-m", "poly_epo_trl.train"]
    for trainer, steps in (("grpo", 2), ("poly_epo", 4)):
        command = [*launch, *run_recipe(tmp_path, trainer, steps), "--per_device_train_batch_size", "32"]
        done = subprocess.run(command, cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=600)
    assert (tmp_path / "run" / "checkpoint-2" / "resume_state_rank1.pt").is_file()
    assert done.returncode != 0
    said = [line for line in done.stderr.splitlines() if "was written by another run" in line]
    # one line, and no traceback of ours (torchrun's launcher tells of the failed processes in its own)
    assert len(said) == 1 and f'File "{ROOT / "poly_epo_trl"}' not in done.stderr, done.stderr[-3000:]


def test_the_readme_installs_what_exists():
    readme = (ROOT / "README.md").read_text()
    assert "pip install poly_epo_trl\n" not in readme and "pip install poly_epo_trl " not in readme
    assert "pip install .  " in readme and "git+" in readme
