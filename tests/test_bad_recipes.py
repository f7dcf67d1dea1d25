"""A battery of broken recipes and arguments against `poly-epo train --dry_run`: each stops before anything heavy
loads, with exit code 2, one message that names the field, and no traceback."""

import importlib.util
import json
import logging
from pathlib import Path

import pytest

from poly_epo_trl.commands import eval as evaluate
from poly_epo_trl.commands.train import main

ROOT = Path(__file__).resolve().parent.parent
RECIPE = (ROOT / "recipes/tiny/poly_epo/config_cpu.yaml").read_text()


def replaced(old: str, new: str) -> str:
    assert old in RECIPE, old
    return RECIPE.replace(old, new)


# (case id, recipe text or extra arguments, a word the message must contain)
RECIPES = [
    ("yaml_syntax", RECIPE + "set_size: [4\n", "recipe.yaml is not valid YAML (line"),  # which file, where
    ("yaml_tab", RECIPE + "\tset_size: 4\n", "not valid YAML"),
    ("unknown_key", RECIPE + "set_sise: 3\n", "did you mean 'set_size'"),
    ("empty_key", RECIPE + '"": 3\n', "line 35: the key '' is not a setting's name"),  # not "Unknown keys: ''"
    ("null_key", RECIPE + "null: 3\n", "line 35: the key None is not a setting's name"),
    ("number_key", RECIPE + "3: x\n", "line 35: the key 3 is not"),
    ("list_key", RECIPE + "? [a, b]\n: 3\n", "line 35: the key a list is not"),  # not "unhashable type: 'list'"
    ("mapping_key_nested", RECIPE + "reward_kwargs: {? {a: 1} : 2}\n", "the key a mapping is not"),
    ("set_size_float", replaced("set_size: 4", "set_size: 2.5"), "set_size=2.5"),
    ("set_size_word", replaced("set_size: 4", "set_size: four"), "set_size"),
    ("set_size_too_big", replaced("set_size: 4", "set_size: 8"), "set_size=8"),
    ("set_size_zero", replaced("set_size: 4", "set_size: 0"), "set_size=0"),
    ("num_generations_zero", RECIPE.replace("num_generations: 8", "num_generations: 0"), "num_generations=0"),
    ("num_generations_null", RECIPE.replace("num_generations: 8", "num_generations: null"), "num_generations=None"),
    ("num_generations_one", RECIPE.replace("num_generations: 8", "num_generations: 1"), "num_generations=1"),
    ("num_generations_text", RECIPE.replace("num_generations: 8", "num_generations: eight"), "num_generations"),
    ("batch_zero", replaced("per_device_train_batch_size: 64", "per_device_train_batch_size: 0"), "per_device"),
    ("batch_float", replaced("per_device_train_batch_size: 64", "per_device_train_batch_size: 6.4"), "per_device"),
    ("accumulation_zero", RECIPE + "gradient_accumulation_steps: 0\n", "gradient_accumulation_steps=0"),
    ("length_zero", replaced("max_completion_length: 6", "max_completion_length: 0"), "max_completion_length=0"),
    ("length_text", replaced("max_completion_length: 6", "max_completion_length: long"), "max_completion_length"),
    ("lr_negative", replaced("learning_rate: 6.0e-4", "learning_rate: -1"), "learning_rate=-1"),
    ("lr_text", replaced("learning_rate: 6.0e-4", "learning_rate: fast"), "learning_rate"),
    ("temperature_zero", RECIPE + "temperature: 0\n", "temperature=0"),
    ("vllm_dtype", RECIPE + "vllm_dtype: fp33\n", "vllm_dtype='fp33'"),
    ("temperature_negative", RECIPE + "temperature: -1\n", "temperature=-1"),
    ("top_p_zero", RECIPE + "top_p: 0\n", "top_p=0"),
    ("adam_beta1_three", RECIPE + "adam_beta1: 3\n", "adam_beta1=3: torch's AdamW refuses it"),
    ("weight_decay_empty", RECIPE + 'weight_decay: ""\n', "weight_decay: invalid float value: ''"),
    ("top_k_negative", RECIPE + "top_k: -2\n", "top_k=-2: transformers' generation refuses it"),
    ("min_p_negative", RECIPE + "min_p: -6.5e16\n", "min_p=-6.5e+16: transformers' generation refuses it"),
    ("steps_per_generation_zero", RECIPE + "steps_per_generation: 0\n", "steps_per_generation=0: it must be at"),
    ("num_iterations_zero", RECIPE + "num_iterations: 0\n", "num_iterations=0: it must be at least 1"),
    ("delta_overflow", RECIPE + "delta: 3.07e303\n", "delta=3.07e+303: it must be a finite number"),
    ("temperature_null", RECIPE + "temperature: null\n", "temperature=None: it must be float"),
    ("deepspeed_empty", RECIPE + 'deepspeed: ""\n', "deepspeed='' is empty: name a DeepSpeed JSON config"),
    ("deepspeed_no_file", RECIPE + "deepspeed: x\n", "deepspeed='x': no such file, and not a config's JSON"),
    (
        "deepspeed_accelerate_yaml",
        RECIPE + "deepspeed: recipes/accelerate_configs/zero2.yaml\n",
        "not a DeepSpeed JSON config (Expecting value: line 1 column 1 (char 0)); an accelerate config (YAML) is "
        "launched with poly-epo train --accelerate_config recipes/accelerate_configs/zero2.yaml",
    ),
    (
        "max_completion_length_null",
        replaced("max_completion_length: 6", "max_completion_length: null"),
        "max_completion_length=None: TRL sizes generation and the dr_grpo loss by it",
    ),
    ("chat_template_empty", RECIPE + 'chat_template: ""\n', "chat_template='' is empty: give a Jinja template"),
    ("eval_dataset_empty", RECIPE + 'eval_dataset_name: " "\n', "eval_dataset_name=' ' is empty"),
    ("rewards_empty", replaced("reward_funcs: [sum_pair]", "reward_funcs: []"), "reward_funcs is empty"),
    ("rewards_string", replaced("reward_funcs: [sum_pair]", "reward_funcs: sum_pair"), "write [sum_pair]"),
    ("reward_unknown", replaced("reward_funcs: [sum_pair]", "reward_funcs: [maths]"), "Unknown reward 'maths'"),
    (
        "reward_open_r1",
        replaced("reward_funcs: [sum_pair]", "reward_funcs: [accuracy]"),
        "open-r1's 'accuracy' is named here by path, open_r1.rewards:accuracy_reward, with open-r1 installed",
    ),
    ("reward_weights_count", RECIPE + "reward_weights: [1.0, 2.0]\n", "reward_weights"),
    ("reward_weights_text", RECIPE + "reward_weights: heavy\n", "reward_weights"),
    ("trainer_unknown", replaced("trainer: poly_epo", "trainer: ppo"), "trainer='ppo'"),
    ("trainer_null", replaced("trainer: poly_epo", "trainer: null"), "trainer=None: name the advantage method"),
    # values the dry run once passed and the first step (or a library at the first step) refused
    ("loss_type_hyphen", RECIPE + "loss_type: dr-grpo\n", "loss_type='dr-grpo' (did you mean 'dr_grpo'?)"),
    ("seed_negative", replaced("seed: 0", "seed: -1"), "seed=-1: numpy seeds within [0, 2**32 - 1] only"),
    (
        "scheduler_without_min_lr",
        replaced("lr_scheduler_type: constant", "lr_scheduler_type: cosine_with_min_lr"),
        "lr_scheduler_type='cosine_with_min_lr' with lr_scheduler_kwargs={}: transformers' scheduler refuses it",
    ),
    ("resume_from_no_checkpoint", RECIPE + "resume_from_checkpoint: recipes\n", "'recipes' is no checkpoint"),
    ("optim_without_bitsandbytes", RECIPE + "optim: adamw_bnb_8bit\n", "optim='adamw_bnb_8bit': You need to install"),
    ("report_to_none_capitalised", replaced("report_to: none", 'report_to: "None"'), "write report_to: none"),
    ("report_to_unknown", replaced("report_to: none", "report_to: [tensorbord]"), "'tensorbord' is no tracker"),
    ("model_is_a_file", replaced("model_name_or_path: builtin:demo", "model_name_or_path: README.md"), "is a file"),
    ("fsdp_blank", RECIPE + "fsdp: ' '\n", "fsdp=' ' is blank, and transformers reads any string as FSDP on"),
    ("set_objective_unknown", RECIPE + "set_objective: rainbow\n", "set_objective"),
    ("set_reduction_unknown", RECIPE + "set_reduction: median\n", "set_reduction"),
    ("set_estimator_unknown", RECIPE + "set_estimator: guess\n", "set_estimator"),
    ("gate_with_other_objective", RECIPE + "diversity_gate: true\nset_objective: pass_at_n\n", "diversity_gate"),
    ("scale_rewards_unknown", RECIPE + "scale_rewards: std\n", "scale_rewards"),
    ("aggregation_normalize", RECIPE + "multi_objective_aggregation: normalize_then_sum\n", "would invert it"),
    ("jit_checkpoint", RECIPE + "enable_jit_checkpoint: true\n", "preemption handling owns SIGTERM"),
    (
        "diversity_coef_negative",
        replaced("diversity_coef: 0.5", "diversity_coef: -1").replace("trainer: poly_epo", "trainer: grpo_div"),
        "Method 'grpo_div': diversity_coef",
    ),
    ("judge_unknown", replaced("judge: sum_pair", "judge: oracle"), "oracle"),
    ("audit_judge_unknown", RECIPE + "audit_judge: oracle\n", "audit_judge='oracle': Unknown judge spec 'oracle'"),
    ("audit_every_zero", RECIPE + "audit_judge: answer\naudit_every: 0\n", "audit_every=0: it must be at least 1"),
    (
        "audit_judge_without_a_judge",
        replaced("trainer: poly_epo", "trainer: grpo") + "audit_judge: answer\n",
        "the audit judge audits the training judge, and trainer='grpo' has none",
    ),
    ("judge_fallback_unknown", RECIPE + "judge_fallback: ignore\n", "judge_fallback"),
    ("judge_template_missing", RECIPE + "judge_template: physics\n", "judge_template"),
    ("judge_timeout_zero", RECIPE + "judge_timeout: 0\n", "judge_timeout"),
    ("judge_fraction_above_one", RECIPE + "judge_max_fallback_frac: 2\n", "judge_max_fallback_frac"),
    ("max_train_samples_zero", RECIPE + "max_train_samples: 0\n", "max_train_samples=0 keeps no training rows"),
    ("judge_outage_negative", RECIPE + "judge_max_outage_seconds: -1\n", "judge_max_outage_seconds"),
    ("preemption_grace_negative", RECIPE + "preemption_grace_seconds: -5\n", "preemption_grace_seconds"),
    ("judge_credentials", RECIPE + "judge_base_url: http://me:pw@h/v1\n", "carries credentials"),
    ("judge_parts_of_one", RECIPE + "judge_max_responses_per_request: 1\n", "judge_max_responses_per_request=1"),
    ("judge_chars_zero", RECIPE + "judge_max_response_chars: 0\n", "judge_max_response_chars=0"),
    ("prompt_column_missing", replaced("prompt_column: problem", "prompt_column: question"), "no column 'question'"),
    ("dataset_missing", replaced("dataset_name: builtin:sum_pair", "dataset_name: missing.jsonl"), "no such file"),
    ("model_missing", replaced("model_name_or_path: builtin:demo", "model_name_or_path: ./no/model"), "no such"),
    (
        "model_unset",  # a built-in task brings its warm start; another dataset does not
        replaced("model_name_or_path: builtin:demo\n", "").replace(
            "builtin:sum_pair", "recipes/data/grade_school_math.jsonl"
        ),
        "model_name_or_path is not set",
    ),
    ("use_cpu_text", replaced("use_cpu: true", "use_cpu: maybe"), "use_cpu"),
    ("code_sandbox_unknown", RECIPE + "code_sandbox: docker\n", "code_sandbox"),
    ("code_memory_zero", RECIPE + "code_memory_mb: 0\n", "code_memory_mb"),
    ("eval_without_steps", RECIPE + "eval_dataset_name: builtin:sum_pair\n", "set eval_steps"),
    ("split_column_number", RECIPE + "split_column: 3\n", "split_column=3"),
    ("test_split_list", RECIPE + "dataset_test_split: [test]\n", "dataset_test_split"),
    ("four_and_eight_bit", RECIPE + "load_in_4bit: true\nload_in_8bit: true\n", "8 bit and 4 bit"),
    ("four_bit_without_bitsandbytes", RECIPE + "load_in_4bit: true\n", "load_in_4bit=true needs bitsandbytes"),
    ("lora_rank_text", RECIPE + "use_peft: true\nlora_r: big\n", "lora_r"),
    ("dtype_number", RECIPE + "dtype: 16\n", "dtype"),
    ("nested_list", RECIPE + "lora_target_modules: [[q_proj]]\n", "lora_target_modules=[['q_proj']]: a list here"),
    ("null_in_list", RECIPE + "lora_target_modules: [null]\n", "and None is not one; write a flat list"),
    (
        "checkpointing_both",
        RECIPE + "gradient_checkpointing: true\n",
        "the first is the deprecated name of the second",
    ),
    # other recipes' keys: what to write instead, never a near-miss setting of another meaning
    ("trl_torch_dtype", RECIPE + "torch_dtype: bfloat16\n", "'torch_dtype' (TRL's older name: write dtype)"),
    ("warmup_ratio", RECIPE + "warmup_ratio: 0.1\n", "'warmup_ratio' (transformers' older name: write warmup_steps"),
    ("trl_max_prompt_length", RECIPE + "max_prompt_length: 512\n", "max_prompt_tokens drops longer ones"),
    ("open_r1_hub_model_revision", RECIPE + "hub_model_revision: v1\n", "write hub_revision"),
    ("open_r1_wandb_entity", RECIPE + "wandb_entity: me\n", "WANDB_ENTITY"),
    (
        "open_r1_prompt_column",
        RECIPE + "dataset_prompt_column: problem\n",
        "prompt_column: <the column>, instruction: ''",
    ),
    ("open_r1_reward_knob", RECIPE + "cosine_max_len: 1000\n", "reward_kwargs"),
    ("reward_kwargs_unknown_reward", RECIPE + "reward_kwargs: {cosine: {max_len: 3}}\n", "which reward_funcs"),
    (
        "reward_kwargs_unknown_argument",
        replaced("reward_funcs: [sum_pair]", "reward_funcs: [reward_factories:make_threshold]")
        + "reward_kwargs: {reward_factories:make_threshold: {above: 3}}\n",
        "gives ['above'], which reward_factories:make_threshold does not take: it takes ['at']",
    ),
    # a mapping given as text: blank (dropped without a word before) or not JSON (a bare json error before)
    ("lr_scheduler_kwargs_blank", RECIPE + 'lr_scheduler_kwargs: ""\n', "lr_scheduler_kwargs='' is blank"),
    (
        "lr_scheduler_kwargs_not_json",
        RECIPE + "lr_scheduler_kwargs: '{min_lr: 1'\n",
        "lr_scheduler_kwargs='{min_lr: 1' is not a JSON object",
    ),
    ("generation_kwargs_blank", RECIPE + "generation_kwargs: '  '\n", "generation_kwargs='  ' is blank"),
    ("generation_kwargs_not_json", RECIPE + "generation_kwargs: top_k=3\n", "generation_kwargs='top_k=3' is not a"),
    ("generation_kwargs_a_list", RECIPE + "generation_kwargs: '[1]'\n", "is list in JSON: it must be a mapping"),
    ("accelerator_config_blank", RECIPE + 'accelerator_config: ""\n', "accelerator_config='' is blank"),
    (
        "lora_names_no_module",
        RECIPE + "use_peft: true\nlora_target_modules: [q_proj, qkv_proj]\n",
        "lora_target_modules=['q_proj', 'qkv_proj']: ['qkv_proj'] name no module of 'builtin:demo'",
    ),
    ("lora_without_peft", RECIPE + "lora_target_modules: [q_proj]\n", "use_peft is false: the LoRA settings would"),
    ("optim_auto", RECIPE + "optim: auto\n", "optim='auto' is not one of transformers' optimizers"),
    ("optim_near_miss", RECIPE + "optim: adamw_torch_fuse\n", "did you mean 'adamw_torch_fused'?"),
    ("key_with_a_space", RECIPE + '" bf16": false\n', "the key ' bf16' has spaces around the name"),
    ("is_cap_blank", RECIPE + 'vllm_importance_sampling_cap: ""\n', "vllm_importance_sampling_cap: invalid float"),
    (
        "audit_judge_unreachable",
        RECIPE + "audit_judge: openai:http://127.0.0.1:9/v1/judge-model\njudge_retry_budget: 1\n",
        "The audit judge (audit_judge='openai:http://127.0.0.1:9/v1/judge-model') did not answer a probe group",
    ),
]


@pytest.mark.parametrize(("text", "word"), [(text, word) for _, text, word in RECIPES], ids=[c for c, _, _ in RECIPES])
def test_a_bad_recipe_stops_at_the_door(text, word, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(text.replace("output_dir: outputs/tiny/poly_epo/cpu", f"output_dir: {tmp_path / 'out'}"))
    with pytest.raises(SystemExit) as stop:
        main(["--config", str(recipe), "--dry_run", "true"])
    assert stop.value.code == 2
    assert word in the_refusal(capsys.readouterr().err)


def the_refusal(err: str) -> str:
    """The one refusal a stopped recipe printed (its ``error:`` line and, for several changes found in one pass, the
    numbered lines under it), checked for no traceback or usage dump."""
    assert "Traceback" not in err and "usage:" not in err
    errors = [i for i, line in enumerate(err.splitlines()) if line.startswith("error: ")]
    assert len(errors) == 1, err[-600:]
    return "\n".join(err.splitlines()[errors[0] :])


@pytest.mark.parametrize(
    ("files", "word"),
    [
        ({"rows.jsonl": ""}, "the file is empty"),
        ({"rows.jsonl": '{"problem": "1+1"}\n\n{oops\n'}, "line 3 is not JSON"),  # the file's line, blank ones counted
        (
            {"rows.jsonl": '{"problem": "1+1"}\n{"problem": "\\ud83d"}\n'},
            "line 2 holds '\\\\ud83d', half of a surrogate",
        ),
        ({"rows.jsonl": b'{"problem": "1+1"}\n{"problem": "\xff"}\n'}, "line 2 is not UTF-8 (invalid start byte"),
        ({"rows.csv": ""}, "the file is empty"),
        ({"afile": "x"}, "is a file, not a folder"),
        ({"notes/readme.md": "x", "notes/sub/deep.bin": "x"}, "is a folder with no data file at its top"),
    ],
)
def test_bad_files_stop_at_the_door(files, word, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    for name, content in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        write = (tmp_path / name).write_bytes if isinstance(content, bytes) else (tmp_path / name).write_text
        write(content)
    name = next(iter(files)).split("/")[0]
    argv = ["--config", "recipes/tiny/poly_epo/config_cpu.yaml", "--dry_run", "true"]
    if name == "afile":
        argv += ["--output_dir", str(tmp_path / "afile" / "out")]
    else:
        argv += ["--dataset_name", str(tmp_path / name), "--output_dir", str(tmp_path / "out")]
    with pytest.raises(SystemExit) as stop:
        main(argv)
    err = capsys.readouterr().err
    assert stop.value.code == 2 and word in err and "Traceback" not in err, err[-600:]


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vLLM is installed here")
def test_use_vllm_without_vllm_stops_at_the_door(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    argv = ["--config", "recipes/tiny/poly_epo/config_cpu.yaml", "--dry_run", "true", "--use_vllm", "true"]
    with pytest.raises(SystemExit) as stop:
        main([*argv, "--output_dir", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and "pip install 'poly_epo_trl[vllm]'" in err and "Traceback" not in err, err[-600:]


EVAL_RECIPE = (ROOT / "recipes/tiny/eval/config_demo.yaml").read_text()


def eval_replaced(old: str, new: str) -> str:
    assert old in EVAL_RECIPE, old
    return EVAL_RECIPE.replace(old, new)


# `poly-epo eval`: (case id, recipe text, a word the message must contain)
EVAL_RECIPES = [
    ("yaml_syntax", EVAL_RECIPE + "num_samples: [4\n", "not valid YAML (line"),
    ("unknown_key", EVAL_RECIPE + "num_sample: 4\n", "did you mean 'num_samples'"),
    ("no_checkpoints", eval_replaced("model_name_or_path: [builtin:demo]", "model_name_or_path: []"), "is empty"),
    ("checkpoint_missing", eval_replaced("[builtin:demo]", "[a=./no/such/run]"), "no such directory"),
    ("checkpoint_empty_label", eval_replaced("[builtin:demo]", "['=builtin:demo']"), "'label=path'"),
    ("checkpoint_labels_repeat", eval_replaced("[builtin:demo]", "[a=builtin:demo, a=builtin:demo]"), "repeat"),
    ("checkpoints_string", eval_replaced("[builtin:demo]", "builtin:demo"), "write [builtin:demo]"),
    ("num_samples_zero", eval_replaced("num_samples: 16", "num_samples: 0"), "num_samples=0"),
    ("num_samples_float", eval_replaced("num_samples: 16", "num_samples: 1.5"), "num_samples=1.5"),
    ("max_new_tokens_zero", eval_replaced("max_new_tokens: 6", "max_new_tokens: 0"), "max_new_tokens=0"),
    ("temperature_zero", eval_replaced("temperature: 1.0", "temperature: 0"), "temperature=0"),
    ("top_p_above_one", EVAL_RECIPE + "top_p: 1.5\n", "top_p=1.5"),
    ("top_k_negative", EVAL_RECIPE + "top_k: -1\n", "top_k=-1"),
    ("backend_unknown", eval_replaced("backend: transformers", "backend: onnx"), "backend='onnx'"),
    ("dtype_unknown", eval_replaced("dtype: float32", "dtype: fp32"), "dtype='fp32'"),
    ("rewards_empty", eval_replaced("reward_funcs: [sum_pair]", "reward_funcs: []"), "reward_funcs is empty"),
    ("reward_unknown", eval_replaced("reward_funcs: [sum_pair]", "reward_funcs: [maths]"), "maths"),
    ("reward_weights_count", EVAL_RECIPE + "reward_weights: [1, 2]\n", "reward_weights"),
    ("confidence_one", EVAL_RECIPE + "confidence: 1\n", "confidence"),
    ("judge_samples_zero", EVAL_RECIPE + "judge_samples: 0\n", "judge_samples=0"),
    ("max_problems_zero", EVAL_RECIPE + "max_problems: 0\n", "max_problems=0"),
    ("vote_answer_unknown", eval_replaced("vote_answer: text", "vote_answer: mode"), "vote_answer"),
    ("judge_unknown", eval_replaced("judge: sum_pair", "judge: oracle"), "oracle"),
    ("dataset_missing", eval_replaced("dataset_name: builtin:sum_pair", "dataset_name: gone.jsonl"), "no such file"),
    ("prompt_column_missing", eval_replaced("prompt_column: problem", "prompt_column: q"), "no column 'q'"),
    ("overwrite_text", EVAL_RECIPE + "overwrite: perhaps\n", "overwrite"),
]


@pytest.mark.parametrize(
    ("text", "word"), [(text, word) for _, text, word in EVAL_RECIPES], ids=[c for c, _, _ in EVAL_RECIPES]
)
def test_a_bad_eval_recipe_stops_at_the_door(text, word, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(text.replace("output_dir: outputs/tiny/eval", f"output_dir: {tmp_path / 'out'}"))
    with pytest.raises(SystemExit) as stop:
        evaluate.main(["--config", str(recipe)])
    assert stop.value.code == 2
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err and "usage:" not in captured.err
    errors = [line for line in captured.err.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and word in errors[0], captured.err[-600:]
    assert not (tmp_path / "out").exists()  # stopped before writing anything


def test_eval_checkpoint_without_a_model_names_the_latest_checkpoint(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    for step in (2, 10):
        (tmp_path / "run" / f"checkpoint-{step}").mkdir(parents=True)
    (tmp_path / "afile").write_text("x")
    argv = ["--config", "recipes/tiny/eval/config_demo.yaml", "--output_dir", str(tmp_path / "out")]
    for extra, word in [
        (["--model_name_or_path", str(tmp_path / "run")], "latest checkpoint is '" + str(tmp_path / "run")),
        (["--model_name_or_path", str(tmp_path / "run" / "checkpoint-2")], "no model in this folder"),
        (["--output_dir", str(tmp_path / "afile" / "out")], "is a file, not a folder"),
        (["--model_name_or_path", "not-a-hub-model-offline"], "is not in the Hub cache, and HF_HUB_OFFLINE is set"),
    ]:
        with pytest.raises(SystemExit) as stop:
            evaluate.main([*argv, *extra])
        err = capsys.readouterr().err
        assert stop.value.code == 2 and word in err and "Traceback" not in err, err[-600:]


def test_a_reward_takes_its_arguments_from_the_recipe(tmp_path, monkeypatch):
    """reward_kwargs: a reward function gets them bound, keeping its name (TRL's metric names); a factory (a function
    without completions, as open-r1's get_cosine_scaled_reward) is called with them for its reward."""
    from poly_epo_trl.assembly.shared import resolve_rewards
    from poly_epo_trl.commands.train import parse

    monkeypatch.chdir(ROOT)
    recipe = tmp_path / "recipe.yaml"
    text = RECIPE.replace("output_dir: outputs/tiny/poly_epo/cpu", f"output_dir: {tmp_path / 'out'}")
    funcs = "reward_funcs: [reward_factories:scaled_length, reward_factories:make_threshold]\n"
    kwargs = (
        "reward_kwargs: {reward_factories:scaled_length: {scale: 2.0}, reward_factories:make_threshold: {at: 3}}\n"
    )
    recipe.write_text(text.replace("reward_funcs: [sum_pair]\n", funcs) + kwargs)
    script_args, _, _ = parse(["--config", str(recipe)])
    scaled, threshold = resolve_rewards(script_args, None)
    assert scaled.__name__ == "scaled_length" and threshold.__name__ == "at_least_3"
    assert scaled(["ab", "abcd"]) == [4.0, 8.0] and threshold(["ab", "abcd"]) == [0.0, 1.0]
    script_args, *_ = parse(
        ["--config", str(recipe), "--reward_kwargs", '{"reward_factories:scaled_length": {"scale": 3}}']
    )
    assert script_args.reward_kwargs == {"reward_factories:scaled_length": {"scale": 3}}  # JSON on the command line


def test_a_column_the_table_has_but_the_prompts_leave_out_is_named_with_the_key_that_keeps_it(
    tmp_path, capsys, monkeypatch, caplog
):
    monkeypatch.chdir(ROOT)
    rows = tmp_path / "rows.jsonl"
    rows.write_text('{"problem": "What is 1 + 1?", "answer": "2", "solution": "1 + 1 = 2"}\n' * 4)
    recipe = tmp_path / "recipe.yaml"
    text = RECIPE.replace("output_dir: outputs/tiny/poly_epo/cpu", f"output_dir: {tmp_path / 'out'}")
    text = text.replace("dataset_name: builtin:sum_pair", f"dataset_name: {rows}").replace('instruction: ""\n', "")
    text = text.replace("judge: sum_pair", "judge: answer")
    recipe.write_text(text.replace("reward_funcs: [sum_pair]", "reward_funcs: [reward_factories:solution_length]"))
    with caplog.at_level(logging.WARNING), pytest.raises(SystemExit):
        main(["--config", str(recipe), "--dry_run", "true"])
    err = capsys.readouterr().err
    assert "which the table has but the training rows leave out" in err and "keep_columns: [solution]" in err, err
    said = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert any("with the math instruction appended" in m for m in said), said  # the prompt changed, said in the log
    parts = main(["--config", str(recipe), "--dry_run", "true", "--keep_columns", "solution", "--instruction", ""])
    rows = parts.train_dataset  # the dry run's assembled parts: the column kept, the prompt as the table has it
    assert rows[0]["solution"] == "1 + 1 = 2" and rows[0]["prompt"] == "What is 1 + 1?", rows[0]


@pytest.mark.parametrize(
    ("solutions", "word"),
    [
        (["\\boxed{5}", None, "\\boxed{2}"], "Row 1 (counting from 0): column 'solution' (answer_column) is empty"),
        (["\\boxed{5}", [4]], "Row 1 (counting from 0): column 'solution' (answer_column) holds list '[4]'"),
        (["\\boxed{5}", {"value": 4}], "holds dict"),
    ],
)
def test_an_answer_some_rows_lack_or_give_as_a_list_is_refused_with_its_row(solutions, word, tmp_path, capsys):
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps({"problem": f"q{i}", "solution": s}) + "\n" for i, s in enumerate(solutions)))
    argv = ["--config", str(ROOT / "recipes/tiny/poly_epo/config_cpu.yaml"), "--dry_run", "true"]
    argv += ["--dataset_name", str(rows), "--answer_column", "solution", "--reward_funcs", "math", "--judge", "answer"]
    with pytest.raises(SystemExit) as stop:
        main([*argv, "--output_dir", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and word in err and "Traceback" not in err, err[-600:]


def test_a_numeric_answer_reaches_the_rewards_as_its_text(tmp_path):
    rows = tmp_path / "rows.jsonl"
    rows.write_text('{"problem": "1+1?", "solution": 2}\n{"problem": "half?", "solution": 0.5}\n')
    argv = ["--config", str(ROOT / "recipes/tiny/poly_epo/config_cpu.yaml"), "--dry_run", "true"]
    argv += ["--dataset_name", str(rows), "--answer_column", "solution", "--reward_funcs", "math", "--judge", "answer"]
    parts = main([*argv, "--output_dir", str(tmp_path / "out")])
    assert parts.train_dataset["answer"] == ["2", "0.5"]


@pytest.mark.parametrize(("column", "prompt_column"), [("answer", "problem"), ("answer", "prompt")])
def test_an_answer_column_of_whole_numbers_reaches_the_rewards_as_text(column, prompt_column, tmp_path):
    """An all-number column already named ``answer`` is written anew as text: datasets would otherwise cast the text
    back to the input column's numbers (in our format and in TRL's, which keeps every column)."""
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps({prompt_column: f"{i}+{i}?", column: 2 * i}) + "\n" for i in range(3)))
    argv = ["--config", str(ROOT / "recipes/tiny/poly_epo/config_cpu.yaml"), "--dry_run", "true"]
    argv += ["--dataset_name", str(rows), "--prompt_column", prompt_column, "--answer_column", column]
    argv += ["--reward_funcs", "math"]
    parts = main([*argv, "--judge", "answer", "--output_dir", str(tmp_path / "out")])
    assert parts.train_dataset["answer"] == ["0", "2", "4"]


def test_a_negative_number_argparse_reads_as_an_option_is_told_how_to_write(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    argv = ["--config", str(ROOT / "recipes/tiny/poly_epo/config_cpu.yaml"), "--dry_run", "true"]
    with pytest.raises(SystemExit):
        main([*argv, "--output_dir", str(tmp_path / "out"), "--min_p", "-6.5e16"])
    assert "min_p: expected one argument (a value that starts with '-' goes after '=': --min_p=-6.5e16)" in (
        the_refusal(capsys.readouterr().err)
    )
    with pytest.raises(SystemExit):
        main([*argv, "--output_dir", str(tmp_path / "out"), "--min_p=-6.5e16"])
    assert "min_p=-6.5e+16: transformers' generation refuses it" in the_refusal(capsys.readouterr().err)


def test_a_null_setting_is_honoured_as_unset_and_said(tmp_path, caplog, monkeypatch):
    """debug: null reads as unset: the run keeps debug's default, and the log says which value it uses."""
    from poly_epo_trl.commands.train import prepare

    monkeypatch.chdir(ROOT)
    recipe = tmp_path / "recipe.yaml"
    text = RECIPE.replace("output_dir: outputs/tiny/poly_epo/cpu", f"output_dir: {tmp_path}")
    recipe.write_text(text + "debug: null\n")
    with caplog.at_level(logging.WARNING):
        _, training_args, _, _ = prepare(["--config", str(recipe), "--dry_run", "true"])
    assert training_args.debug == []
    assert "debug: null in the recipe reads as unset: the run uses debug=[] (the default)" in caplog.text


def test_a_conversation_without_a_user_turn_stops_at_the_door(tmp_path, capsys, monkeypatch):
    """A system-only chat row: the model would be asked nothing; the door names the row and its roles."""
    monkeypatch.chdir(ROOT)
    rows = tmp_path / "rows.jsonl"
    good = [{"role": "system", "content": "You add."}, {"role": "user", "content": "S=12:"}]
    rows.write_text(
        json.dumps({"prompt": good})
        + "\n"
        + json.dumps({"prompt": [{"role": "system", "content": "You add."}]})
        + "\n"
    )
    argv = ["--config", "recipes/tiny/poly_epo/config_cpu.yaml", "--dry_run", "true", "--dataset_name", str(rows)]
    argv += ["--prompt_column", "prompt", "--chat_format", "true", "--output_dir", str(tmp_path / "out")]
    with pytest.raises(SystemExit) as stop:
        main(argv)
    err = capsys.readouterr().err
    assert stop.value.code == 2 and "Traceback" not in err
    assert "Training row 1's prompt holds no user message (roles ['system'])" in err
