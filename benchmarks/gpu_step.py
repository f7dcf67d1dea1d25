"""Poly-EPO's training step on a GPU, at a real model's shape: the Poly-EPO / GRPO step ratio, and the time
Poly-EPO's own code adds to a step.

Usage: python benchmarks/gpu_step.py [--steps 7] [--latency 2.0] [--rounds 1]

1. Ratio. Qwen3-0.6B's shape (random weights, a character tokenizer: nothing to download), bf16, activation
   checkpointing, 4 prompts x 8 rollouts of 128 tokens, a reward and a judge of ``latency`` seconds each; GRPO
   (TRL's GRPOTrainer, Dr.GRPO settings) and Poly-EPO, median step of each (``step_overlap.overlap``).
2. Overhead. 128 groups of 8 with an instant reward and judge: the milliseconds Poly-EPO's overrides add to a step
   beyond the GRPOTrainer methods they call (``step_overlap.overhead``, the GPU synchronized at the boundaries so
   each side is charged for its own kernels). Goal: at most 5 ms.

Without a GPU it runs the tiny CPU shape instead, to show it runs: its figures are for GPUs, and on CPU
``benchmarks/step_overlap.py`` is the benchmark to read.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "helpers"))

from step_overlap import CPU, overhead, overlap
from tiny import save_tiny_model

from poly_epo_trl.tasks.sum_pair import ALPHABET
from poly_epo_trl.tasks.sum_pair.tiny import build_char_tokenizer

GPU = {"use_cpu": False, "bf16": True, "activation_checkpointing": True, "max_completion_length": 128}


def save_qwen3_0_6b_shape(directory: Path) -> Path:
    """A random Qwen3 at Qwen3-0.6B's shape (28 layers, hidden 1024), with the toy task's character tokenizer."""
    from transformers import Qwen3Config, Qwen3ForCausalLM

    tokenizer = build_char_tokenizer(ALPHABET)
    config = Qwen3Config(
        vocab_size=len(tokenizer), hidden_size=1024, intermediate_size=3072, num_hidden_layers=28,
        num_attention_heads=16, num_key_value_heads=8, head_dim=128, max_position_embeddings=4096,
        tie_word_embeddings=True, pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id,
        bos_token_id=None,
    )  # fmt: skip
    torch.manual_seed(0)
    model = Qwen3ForCausalLM(config)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=7)
    parser.add_argument("--latency", type=float, default=2.0)
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    on_gpu = torch.cuda.is_available()
    with tempfile.TemporaryDirectory() as folder:
        if on_gpu:
            print(f"device: {torch.cuda.get_device_name()}; model: Qwen3-0.6B's shape, bf16")
            model_dir, device = save_qwen3_0_6b_shape(Path(folder) / "model"), GPU
        else:
            print("device: CPU (no GPU here): the tiny shape, float32, to show the benchmark runs; its figures are")
            print("for GPUs, and on CPU benchmarks/step_overlap.py is the one to read.")
            torch.set_num_threads(1)
            model_dir, device = save_tiny_model(Path(folder) / "model"), CPU
        grpo, poly = overlap(model_dir, args.rounds, args.steps, args.latency, batch=32, device=device)
        ms = overhead(model_dir, args.steps, device)
    where = torch.cuda.get_device_name() if on_gpu else "CPU, tiny shape"
    print(f"summary ({where}): Poly-EPO / GRPO step {poly / grpo:.3f}; Poly-EPO's own time {ms:.2f} ms per step")


if __name__ == "__main__":
    main()
