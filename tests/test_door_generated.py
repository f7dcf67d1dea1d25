"""The door under generated settings: any value of a GRPO setting that a library refuses later (at the first step,
the first generation, the first save) stops when the config is made, with a ValueError that names the field; any
other is honoured as given. The oracle asks the libraries themselves (torch's AdamW, transformers' sampling
processors) whether they would take the value."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from transformers.generation.logits_process import MinPLogitsWarper, TopKLogitsWarper
from trl import GRPOConfig

from poly_epo_trl.trainer import PolyEPOConfig
from poly_epo_trl.trainer.door import check_grpo_settings

ROOT = Path(__file__).resolve().parents[1]
BASE = dict(output_dir="out", use_cpu=True, report_to="none")
NUMBERS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-5, max_value=5),
    st.sampled_from([0, 0.0, -1e-9, 1.0, 1e303, -1e303]),
)
EXAMPLES = settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))


def adamw_takes(beta1: float) -> bool:
    try:
        torch.optim.AdamW([torch.zeros(1, requires_grad=True)], betas=(beta1, 0.999))
    except ValueError:
        return False
    return True


def refused(**values) -> str | None:
    """The door's refusal of ``values`` in a PolyEPOConfig (None: taken)."""
    try:
        PolyEPOConfig(**{**BASE, **values})
    except ValueError as error:
        return str(error)
    return None


@EXAMPLES
@given(NUMBERS)
def test_adam_beta1_stops_at_the_door_exactly_where_torch_would_refuse_it(value):
    said = refused(adam_beta1=value)
    takes = math.isfinite(value) and adamw_takes(float(value))  # an int is a float to the Trainer, as to the parser
    assert (said is None) == takes, (value, said)
    if said is not None:
        assert said.startswith("adam_beta1="), said


@EXAMPLES
@given(st.integers(min_value=-(10**6), max_value=10**6))
def test_top_k_stops_where_transformers_generation_would(value):
    said = refused(top_k=value)
    try:
        if value:
            TopKLogitsWarper(value)
        takes = True
    except ValueError:
        takes = False
    assert (said is None) == takes, (value, said)
    assert said is None or said.startswith("top_k="), said


@EXAMPLES
@given(st.floats(allow_nan=True, allow_infinity=True))
def test_min_p_stops_where_transformers_generation_would(value):
    said = refused(min_p=value)
    try:
        MinPLogitsWarper(value)
        takes = math.isfinite(value)
    except ValueError:
        takes = False
    assert (said is None) == takes, (value, said)
    assert said is None or said.startswith("min_p="), said


@EXAMPLES
@given(st.integers(min_value=-3, max_value=3), st.sampled_from(["num_iterations", "steps_per_generation"]))
def test_a_count_below_one_stops_and_one_above_is_honoured(value, name):
    said = refused(**{name: value})
    assert (said is None) == (value >= 1), (name, value, said)
    if said is None:
        assert getattr(PolyEPOConfig(**BASE, **{name: value}), name) == value
    else:
        assert said.startswith(f"{name}={value}: it must be at least 1"), said


@EXAMPLES
@given(st.floats(allow_nan=True, allow_infinity=True) | st.sampled_from([3.07e303, -1e39, 3.4e38]))
def test_a_float_setting_the_float32_loss_cannot_hold_stops(value):
    said = refused(delta=value)
    holds = math.isfinite(value) and abs(value) <= 3.4028234663852886e38
    assert (said is None) == holds, (value, said)
    assert said is None or said.startswith("delta="), said


@pytest.mark.parametrize(
    ("values", "said"),
    [
        ({"adam_beta1": 3.0}, "adam_beta1=3.0: torch's AdamW refuses it"),
        ({"weight_decay": ""}, "weight_decay='' is str: it must be float"),
        ({"top_k": -2}, "top_k=-2: transformers' generation refuses it"),
        ({"min_p": -6.5e16}, "min_p=-6.5e+16: transformers' generation refuses it"),
        ({"steps_per_generation": 0}, "steps_per_generation=0: it must be at least 1"),
        ({"num_iterations": 0}, "num_iterations=0: it must be at least 1"),
        ({"delta": 3.07e303}, "delta=3.07e+303: it must be a finite number"),
        ({"output_dir": ""}, "output_dir='': the run writes its checkpoints there"),
        ({"output_dir": "x" * 300}, "more than the 255 a file name may have here"),
        ({"gradient_accumulation_steps": 1.0}, "gradient_accumulation_steps=1.0 is float: it must be int"),
        ({"reward_weights": ["a"]}, "reward_weights=['a'] is list: it must be a list of float"),
        ({"off_policy_mask_threshold": []}, "off_policy_mask_threshold=[] is list"),
        ({"torch_compile_backend": 3}, "torch_compile_backend=3 is int: it must be str"),
    ],
)
def test_each_kind_found_by_generated_inputs_stops_naming_the_field(values, said):
    """Each stops a PolyEPOConfig when it is made, and a user's own GRPOConfig at the trainer's door (the same
    check, ``door.check_grpo_settings``), with the field, the value and what to set."""
    assert said in (refused(**{**values}) or ""), values
    config = GRPOConfig(**{**BASE, **values})  # GRPOConfig itself takes each
    with pytest.raises(ValueError, match=next(iter(values))):
        check_grpo_settings(config)


# ------------------------------------------------------------------------------------------------- generated rows

TEXT = st.text(max_size=12)  # any code point, lone surrogates included
CELL = st.one_of(
    TEXT,
    st.integers(-(10**6), 10**6),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.none(),
    st.booleans(),
    st.lists(st.integers(0, 9), max_size=2),
    st.dictionaries(st.sampled_from(["a", "b"]), st.integers(0, 9), max_size=1),
)
PLAIN_TEXT = st.text(st.characters(exclude_categories=["Cs"]), min_size=1, max_size=12)
ROW = st.fixed_dictionaries(  # mostly well-formed (a problem text, an answer), else anything in any cell
    {
        "problem": st.one_of(*[PLAIN_TEXT] * 8, CELL),
        "answer": st.one_of(*[PLAIN_TEXT] * 3, st.integers(), st.floats(allow_nan=False, allow_infinity=False), CELL),
    },
    optional={"extra": CELL},
)
ROW_EXAMPLES = settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))


def answer_text(value) -> str:
    """A row's answer as the documented form gives it to the rewards."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


@ROW_EXAMPLES
@given(rows=st.lists(ROW, min_size=1, max_size=3))
def test_generated_rows_are_refused_with_a_recipe_error_or_reach_the_rewards_exactly(rows, tmp_path_factory):
    """Any table of rows with missing, extra or mistyped columns, any text (invalid UTF-8 once written), lists and
    mappings where text belongs: the door (the file read, then the rows made into prompts) either refuses it with a
    RecipeError or gives each row's problem and answer to the rewards exactly as the documented form has them. No
    other exception (a library's, from deep inside) gets out."""
    from poly_epo_trl.data import DatasetArguments, format_dataset, load_table
    from poly_epo_trl.recipe import RecipeError

    path = tmp_path_factory.mktemp("rows") / "rows.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    args = DatasetArguments(dataset_name=str(path), prompt_column="problem", instruction="", chat_format=False)
    try:
        made = format_dataset(load_table(args, "train"), args)
    except RecipeError as error:
        event(f"refused: {str(error)[:40]}")
        assert str(error), rows
        return
    event("honoured")
    for row, out in zip(rows, made, strict=True):
        assert out["prompt"] == row["problem"].strip(), (row, out)  # a problem's text without surrounding space
        assert out["answer"] == answer_text(row["answer"]), (row, out)


# ------------------------------------------------------------------------------------------ generated recipe keys

KNOWN = ["set_size", "learning_rate", "num_generations", "temperature", "judge", "reward_funcs", "beta", "use_cpu"]
KEY = st.one_of(  # mostly real keys, then near-miss spellings and any name
    st.sampled_from(KNOWN),
    st.sampled_from(KNOWN),
    st.sampled_from(KNOWN),
    st.sampled_from(KNOWN).map(lambda k: k[:-1]),
    st.text(alphabet="abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=10),
)
VALUE = st.one_of(
    st.integers(-3, 10),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.none(),
    st.text(max_size=6),
    st.lists(st.integers(0, 3), max_size=2),
)


@ROW_EXAMPLES
@given(keys=st.dictionaries(KEY, VALUE, min_size=1, max_size=3))
def test_generated_recipe_keys_are_refused_with_a_recipe_error_or_honoured_exactly(keys, tmp_path_factory):
    """A recipe (the tiny CPU recipe) with generated keys and values of any type: parsing it gives a RecipeError
    naming what to change, or configs whose fields hold exactly the values given (an int for a float field read as
    that number). No other exception, and no value silently changed."""
    import yaml

    from poly_epo_trl.commands.train import parse
    from poly_epo_trl.recipe import RecipeError

    recipe = yaml.safe_load((ROOT / "recipes/tiny/poly_epo/config_cpu.yaml").read_text())
    recipe.update(keys)
    path = tmp_path_factory.mktemp("recipe") / "recipe.yaml"
    path.write_text(yaml.safe_dump(recipe))
    try:
        configs = parse(["--config", str(path)])
    except RecipeError as error:
        event(f"refused: {str(error)[:30]}")
        assert str(error), keys
        return
    event("honoured")
    for key, value in keys.items():
        held = [getattr(c, key) for c in configs if hasattr(c, key)]
        assert held, (key, keys)  # an unknown key is never taken without a word
        if value is not None:  # null is "unset": the field's default
            assert all(
                h == value or (isinstance(value, float) and math.isnan(value) and math.isnan(h)) for h in held
            ), (
                key,
                value,
                held,
            )
