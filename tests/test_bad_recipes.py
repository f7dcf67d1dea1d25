"""A battery of broken recipes and arguments against `poly-epo train --dry_run`: each stops before anything heavy
loads, with exit code 2, one message that names the field, and no traceback."""

from pathlib import Path

import pytest

from poly_epo_trl.train import main

ROOT = Path(__file__).resolve().parent.parent
RECIPE = (ROOT / "recipes/tiny/poly_epo/config_cpu.yaml").read_text()


def replaced(old: str, new: str) -> str:
    assert old in RECIPE, old
    return RECIPE.replace(old, new)


# (case id, recipe text or extra arguments, a word the message must contain)
RECIPES = [
    ("yaml_syntax", RECIPE + "set_size: [4\n", "not valid YAML (line"),
    ("yaml_tab", RECIPE + "\tset_size: 4\n", "not valid YAML"),
    ("unknown_key", RECIPE + "set_sise: 3\n", "did you mean 'set_size'"),
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
    ("temperature_negative", RECIPE + "temperature: -1\n", "temperature=-1"),
    ("top_p_zero", RECIPE + "top_p: 0\n", "top_p=0"),
    ("rewards_empty", replaced("reward_funcs: [sum_pair]", "reward_funcs: []"), "reward_funcs is empty"),
    ("rewards_string", replaced("reward_funcs: [sum_pair]", "reward_funcs: sum_pair"), "write [sum_pair]"),
    ("reward_unknown", replaced("reward_funcs: [sum_pair]", "reward_funcs: [maths]"), "Unknown reward 'maths'"),
    ("reward_weights_count", RECIPE + "reward_weights: [1.0, 2.0]\n", "reward_weights"),
    ("reward_weights_text", RECIPE + "reward_weights: heavy\n", "reward_weights"),
    ("trainer_unknown", replaced("trainer: poly_epo", "trainer: ppo"), "trainer='ppo'"),
    ("set_objective_unknown", RECIPE + "set_objective: rainbow\n", "set_objective"),
    ("set_reduction_unknown", RECIPE + "set_reduction: median\n", "set_reduction"),
    ("set_estimator_unknown", RECIPE + "set_estimator: guess\n", "set_estimator"),
    ("gate_with_other_objective", RECIPE + "diversity_gate: true\nset_objective: pass_at_n\n", "diversity_gate"),
    ("scale_rewards_group", RECIPE + "scale_rewards: group\n", "scale_rewards"),
    ("diversity_coef_negative", replaced("diversity_coef: 0.5", "diversity_coef: -1"), "diversity_coef"),
    ("judge_unknown", replaced("judge: python:poly_epo_trl.demo.task:pair_judge", "judge: oracle"), "oracle"),
    ("judge_fallback_unknown", RECIPE + "judge_fallback: ignore\n", "judge_fallback"),
    ("judge_template_missing", RECIPE + "judge_template: physics\n", "judge_template"),
    ("judge_timeout_zero", RECIPE + "judge_timeout: 0\n", "judge_timeout"),
    ("judge_fraction_above_one", RECIPE + "judge_max_fallback_frac: 2\n", "judge_max_fallback_frac"),
    ("judge_credentials", RECIPE + "judge_base_url: http://me:pw@h/v1\n", "carries credentials"),
    ("prompt_column_missing", replaced("prompt_column: problem", "prompt_column: question"), "no column 'question'"),
    ("dataset_missing", replaced("dataset_name: builtin:sum_pair", "dataset_name: missing.jsonl"), "no such file"),
    ("model_missing", replaced("model_name_or_path: builtin:demo", "model_name_or_path: ./no/model"), "no such"),
    ("model_unset", replaced("model_name_or_path: builtin:demo\n", ""), "model_name_or_path is not set"),
    ("use_cpu_text", replaced("use_cpu: true", "use_cpu: maybe"), "use_cpu"),
    ("code_sandbox_unknown", RECIPE + "code_sandbox: docker\n", "code_sandbox"),
    ("code_memory_zero", RECIPE + "code_memory_mb: 0\n", "code_memory_mb"),
    ("eval_without_steps", RECIPE + "eval_dataset_name: builtin:sum_pair\n", "set eval_steps"),
]


@pytest.mark.parametrize(("text", "word"), [(text, word) for _, text, word in RECIPES], ids=[c for c, _, _ in RECIPES])
def test_a_bad_recipe_stops_at_the_door(text, word, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(text.replace("output_dir: outputs/tiny/poly_epo/cpu", f"output_dir: {tmp_path / 'out'}"))
    with pytest.raises(SystemExit) as stop:
        main(["--config", str(recipe), "--dry_run", "true"])
    assert stop.value.code == 2
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err and "usage:" not in captured.err
    errors = [line for line in captured.err.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and word in errors[0], captured.err[-600:]


@pytest.mark.parametrize(
    ("files", "word"),
    [
        ({"rows.jsonl": ""}, "the file is empty"),
        ({"rows.jsonl": '{"problem": "1+1"}\n{oops\n'}, "row 2 is not JSON"),
        ({"rows.csv": ""}, "the file is empty"),
        ({"afile": "x"}, "is a file, not a folder"),
    ],
)
def test_bad_files_stop_at_the_door(files, word, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    for name, content in files.items():
        (tmp_path / name).write_text(content)
    name = next(iter(files))
    argv = ["--config", "recipes/tiny/poly_epo/config_cpu.yaml", "--dry_run", "true"]
    if name == "afile":
        argv += ["--output_dir", str(tmp_path / "afile" / "out")]
    else:
        argv += ["--dataset_name", str(tmp_path / name), "--output_dir", str(tmp_path / "out")]
    with pytest.raises(SystemExit) as stop:
        main(argv)
    err = capsys.readouterr().err
    assert stop.value.code == 2 and word in err and "Traceback" not in err, err[-600:]
