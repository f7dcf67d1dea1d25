"""The door under generated settings: any value of a GRPO setting that a library refuses later (at the first step,
the first generation, the first save) stops when the config is made, with a ValueError that names the field; any
other is honoured as given. The oracle asks the libraries themselves (torch's AdamW, transformers' sampling
processors) whether they would take the value."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from transformers.generation.logits_process import MinPLogitsWarper, TopKLogitsWarper
from trl import GRPOConfig

from poly_epo_trl.trainer import PolyEPOConfig
from poly_epo_trl.trainer.door import check_grpo_settings

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
