"""The GPU tier (``make test-gpu``, marker ``gpu``): what a GPU user meets first, run for real on CUDA. Each test is
skipped without a GPU, saying so; on a machine with one, ``make test-gpu`` runs them all (a few minutes on one H100):

- the tiny recipe in bf16, with checkpoints, curves and the audit trail;
- LoRA at Qwen3-0.6B's shape (random weights, SmolLM2's tokenizer: nothing to download), gradients reaching the
  adapter and the adapter saved;
- one process through the shipped FSDP2, ZeRO-2 and ZeRO-3 configs, each engine line naming its engine;
- ``poly-epo eval`` of a trained checkpoint on CUDA;
- vLLM colocate generation, when vLLM is installed.

``benchmarks/gpu_step.py`` measures the step on a GPU (the Poly-EPO / GRPO ratio and Poly-EPO's own milliseconds).
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parent.parent
CONFIGS = ROOT / "recipes" / "accelerate_configs"
TINY = "recipes/tiny/poly_epo/config_cpu.yaml"
ON_GPU = ["--use_cpu", "false", "--bf16", "true"]
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false", "WANDB_MODE": "disabled"}

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(
        not torch.cuda.is_available(),
        reason="needs a CUDA GPU: the GPU tier (make test-gpu) runs where one is; CPU runs are the rest of the suite",
    ),
]


def poly_epo(*argv: str, timeout: int = 900) -> str:
    """``poly-epo <argv>`` as a user runs it; its output. Fails with the end of the output when it fails."""
    command = [sys.executable, "-m", "poly_epo_trl.cli", *argv]
    result = subprocess.run(command, cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=timeout)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-6000:]
    return output


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory) -> Path:
    """The tiny recipe trained 20 steps in bf16 on the GPU, checkpoints every 10."""
    out = tmp_path_factory.mktemp("tiny") / "run"
    argv = ["train", "--config", TINY, *ON_GPU, "--max_steps", "20", "--logging_steps", "5"]
    argv += ["--save_strategy", "steps", "--save_steps", "10", "--output_dir", str(out)]
    logs = poly_epo(*argv)
    assert "'poly_epo/distinct_correct_clusters'" in logs and "Training on CPU" not in logs
    return out


def test_the_tiny_recipe_trains_in_bf16_on_the_gpu(tiny_run):
    from transformers import AutoModelForCausalLM

    state = json.loads((tiny_run / "checkpoint-20" / "trainer_state.json").read_text())
    assert state["global_step"] == 20 and (tiny_run / "checkpoint-10").is_dir()
    assert (tiny_run / "training_curves.png").stat().st_size > 0 and (tiny_run / "judged_groups.jsonl").is_file()
    model = AutoModelForCausalLM.from_pretrained(tiny_run)
    assert all(torch.isfinite(p).all() for p in model.parameters())


def test_lora_at_qwen3_0_6b_shape(tmp_path):
    """The one-GPU LoRA recipe at Qwen3-0.6B's shape: 4 steps, LoRA's B matrices move, the adapter is saved."""
    from transformers import AutoTokenizer, Qwen3Config, Qwen3ForCausalLM

    from poly_epo_trl.models import smollm2_path

    tokenizer = AutoTokenizer.from_pretrained(smollm2_path())
    config = Qwen3Config(
        vocab_size=len(tokenizer), hidden_size=1024, intermediate_size=3072, num_hidden_layers=28,
        num_attention_heads=16, num_key_value_heads=8, head_dim=128, max_position_embeddings=4096,
        tie_word_embeddings=True, pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id,
    )  # fmt: skip
    torch.manual_seed(0)
    Qwen3ForCausalLM(config).to(torch.bfloat16).save_pretrained(tmp_path / "qwen3-0.6b-shape")
    tokenizer.save_pretrained(tmp_path / "qwen3-0.6b-shape")
    argv = ["train", "--config", "recipes/Qwen3-0.6B-Base/poly_epo/config_lora_polaris.yaml"]
    argv += ["--model_name_or_path", str(tmp_path / "qwen3-0.6b-shape")]
    argv += ["--dataset_name", str(ROOT / "recipes/data/grade_school_math.jsonl"), "--prompt_column", "question"]
    argv += ["--use_vllm", "false", "--report_to", "none", "--max_steps", "4", "--max_completion_length", "64"]
    argv += ["--per_device_train_batch_size", "16", "--gradient_accumulation_steps", "1"]
    argv += ["--save_strategy", "no", "--output_dir", str(tmp_path / "out")]
    logs = poly_epo(*argv)
    assert logs.count("'loss'") == 4
    from safetensors.torch import load_file

    adapter = load_file(tmp_path / "out" / "adapter_model.safetensors")
    assert any(name.endswith("lora_B.weight") and tensor.abs().sum() > 0 for name, tensor in adapter.items())


@pytest.mark.parametrize(
    ("engine", "name"), [("fsdp", "FSDP2"), ("zero2", "DeepSpeed ZeRO-2"), ("zero3", "DeepSpeed ZeRO-3")]
)
def test_one_process_under_each_shipped_engine(tmp_path, engine, name):
    if engine != "fsdp":
        pytest.importorskip("deepspeed", reason="DeepSpeed is an extra: pip install 'poly_epo_trl[deepspeed]'")
    out = tmp_path / "out"
    argv = ["train", "--accelerate_config", str(CONFIGS / f"{engine}.yaml"), "--num_processes", "1"]
    argv += ["--config", TINY, *ON_GPU, "--max_steps", "4", "--output_dir", str(out)]
    logs = poly_epo(*argv)
    assert f"engine: {name} on 1 process" in logs
    from poly_epo_trl.models import resolve_model

    assert Path(resolve_model(str(out))).is_dir()


def test_eval_of_a_trained_checkpoint_on_cuda(tiny_run, tmp_path):
    argv = ["eval", "--config", "recipes/tiny/eval/config_demo.yaml", "--model_name_or_path", f"trained={tiny_run}"]
    argv += ["--backend", "transformers", "--num_samples", "8", "--max_problems", "4", "--output_dir", str(tmp_path)]
    poly_epo(*argv)
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["summaries"]["trained"]["pass_at_k"]["mean"]


def test_vllm_colocate_generation(tmp_path):
    pytest.importorskip("vllm", reason="vLLM is an extra: pip install 'poly_epo_trl[vllm]'")
    argv = ["train", "--config", TINY, *ON_GPU, "--max_steps", "2", "--use_vllm", "true", "--vllm_mode", "colocate"]
    argv += ["--vllm_gpu_memory_utilization", "0.2", "--output_dir", str(tmp_path / "out")]
    logs = poly_epo(*argv)
    assert logs.count("'loss'") >= 1 and "'poly_epo/set_score'" in logs


def test_the_real_lm_benchmark_runs_two_steps_on_the_gpu(tmp_path):
    """``benchmarks/real_lm.py`` on CUDA, as a GPU user runs it with ``--model``, two steps of each method (a tiny
    random start with SmolLM2's tokenizer in place of the warm start: nothing to download); vLLM colocated where it
    is installed."""
    from test_real_lm import TINY, tiny_start

    start = tiny_start(tmp_path / "start")
    argv = ["benchmarks/real_lm.py", "--model", "tiny", "--start", str(start), *TINY, "--out", str(tmp_path / "out")]
    result = subprocess.run([sys.executable, *argv], cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, (result.stdout + result.stderr)[-6000:]
    report = json.loads((tmp_path / "out" / "results.json").read_text())
    assert report["hardware"].startswith("one ") and set(report["targets"]) >= {"distinct_ratio", "pass_at_1"}
    assert all(run["0"]["train_seconds"] > 0 for run in report["runs"].values())
