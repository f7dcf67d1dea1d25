"""Sampling k completions per problem: vLLM when installed, transformers otherwise.

A problem's samples depend only on (seed, problem index), not on batching, so a resumed evaluation draws exactly
what an uninterrupted one would have.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import torch

from ..vllm_cpu import in_process_engine, seeded_engine_kwargs

Prompt = str | list[dict[str, Any]]
BACKENDS = ("auto", "vllm", "transformers")


@dataclass
class SamplingSettings:
    """How completions are drawn; recorded with the samples so a resumed run cannot silently change them."""

    num_samples: int = 16
    max_new_tokens: int = 1024
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    seed: int = 0

    def __post_init__(self) -> None:
        if self.num_samples < 1 or self.max_new_tokens < 1:
            raise ValueError("num_samples and max_new_tokens must be at least 1.")
        if self.temperature <= 0:
            raise ValueError(f"temperature={self.temperature}: sampling needs a temperature > 0 (pass@k at 0 is 0/1).")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p={self.top_p} must be in (0, 1].")

    def problem_seed(self, index: int) -> int:
        return self.seed * 1_000_003 + index


class Sampler(Protocol):
    """Draws ``settings.num_samples`` completions (text) for each prompt, given the problems' dataset indices."""

    def sample(self, prompts: Sequence[Prompt], indices: Sequence[int]) -> list[list[str]]: ...


def vllm_available() -> bool:
    return importlib.util.find_spec("vllm") is not None


def choose_backend(backend: str) -> str:
    """``auto`` is vLLM when it is installed (and a GPU is there), transformers otherwise."""
    if backend not in BACKENDS:
        raise ValueError(f"backend={backend!r}: use one of {BACKENDS}.")
    if backend == "vllm" and not vllm_available():
        raise ValueError("backend='vllm' but vLLM is not installed: pip install 'poly_epo_trl[vllm]', or use 'auto'.")
    if backend == "auto":
        return "vllm" if vllm_available() and torch.cuda.is_available() else "transformers"
    return backend


def vllm_sampling_kwargs(settings: SamplingSettings, index: int) -> dict[str, Any]:
    """Arguments of ``vllm.SamplingParams`` for one problem (its own seed: independent of batching)."""
    return {
        "n": settings.num_samples,
        "temperature": settings.temperature,
        "top_p": settings.top_p,
        "top_k": settings.top_k if settings.top_k > 0 else -1,
        "max_tokens": settings.max_new_tokens,
        "seed": settings.problem_seed(index),
    }


class VLLMSampler:
    """vLLM offline engine; chat prompts go through ``LLM.chat`` (the model's chat template). On vLLM's CPU build the
    engine runs in this process (``vllm_cpu.in_process_engine``)."""

    def __init__(self, model: str, settings: SamplingSettings, **engine_kwargs: Any) -> None:
        in_process_engine()
        from vllm import LLM

        self.settings = settings
        self.llm = LLM(model=model, seed=settings.seed, **{**seeded_engine_kwargs(), **engine_kwargs})

    def sample(self, prompts: Sequence[Prompt], indices: Sequence[int]) -> list[list[str]]:
        from vllm import SamplingParams

        params = [SamplingParams(**vllm_sampling_kwargs(self.settings, i)) for i in indices]
        if prompts and isinstance(prompts[0], list):
            outputs = self.llm.chat(list(prompts), params, use_tqdm=False)
        else:
            outputs = self.llm.generate(list(prompts), params, use_tqdm=False)
        return [[choice.text for choice in output.outputs] for output in outputs]


def trainer_engine(trainer: Any) -> tuple[Any, str]:
    """The colocated vLLM engine of a TRL trainer's run (``GRPOTrainer.vllm_generation``; TRL's seams pinned by
    ``tests/test_trl_seams.py``) that an in-training evaluation can sample with, and why not where none: no vLLM,
    server mode, tensor parallelism (TRL spreads each prompt over the group) or sleep mode (TRL discards the weights
    between its generations)."""
    generation = getattr(trainer, "vllm_generation", None) if getattr(trainer.args, "use_vllm", False) else None
    if generation is None:
        return None, "the run generates with transformers"
    if generation.mode != "colocate":
        return None, f"vllm_mode={generation.mode!r}: the server samples training's groups only"
    if generation.tensor_parallel_size > 1:
        return None, f"vllm_tensor_parallel_size={generation.tensor_parallel_size}"
    if generation.enable_sleep_mode:
        return None, "vllm_enable_sleep_mode=True: the engine's weights sleep between training's generations"
    return generation, "the run's colocated vLLM engine"


class TrainerVLLMSampler:
    """Samples with a trainer's colocated vLLM engine (``trainer_engine``), its weights synced to the policy being
    trained first, as TRL syncs them before a generation (once a step: TRL's own next generation then skips it).
    Prompts are tokenized with the trainer's processing class, as for transformers; problem i's samples are seeded by
    (seed, i), as every evaluation draws them."""

    def __init__(self, trainer: Any, generation: Any, settings: SamplingSettings) -> None:
        """Syncs the engine on every process, with or without problems of its own to sample: under ZeRO-3 the sync
        gathers the partitioned weights, which every process must join."""
        self.trainer, self.generation, self.settings = trainer, generation, settings
        if trainer.state.global_step != trainer._last_loaded_step:
            generation.sync_weights()
            trainer._last_loaded_step = trainer.state.global_step

    def sample(self, prompts: Sequence[Prompt], indices: Sequence[int]) -> list[list[str]]:
        from vllm import SamplingParams

        tokenizer = self.trainer.processing_class
        requests = [{"prompt_token_ids": prompt_token_ids(tokenizer, p)} for p in prompts]
        params = [SamplingParams(**vllm_sampling_kwargs(self.settings, i)) for i in indices]
        outputs = self.generation.llm.generate(requests, params, use_tqdm=False)
        return [
            tokenizer.batch_decode([choice.token_ids for choice in output.outputs], skip_special_tokens=True)
            for output in outputs
        ]


def prompt_token_ids(tokenizer: Any, prompt: Prompt) -> list[int]:
    """A prompt's token ids; a chat prompt through the chat template (which adds its own special tokens)."""
    if isinstance(prompt, list):
        text = tokenizer.apply_chat_template(prompt, tokenize=False, add_generation_prompt=True)
        return tokenizer(text, add_special_tokens=False)["input_ids"]
    return tokenizer(prompt)["input_ids"]


class TransformersSampler:
    """``model.generate`` with the tokenizer's chat template, one problem at a time in chunks of ``batch_size``."""

    def __init__(self, model: Any, tokenizer: Any, settings: SamplingSettings, batch_size: int = 64) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1.")
        self.model, self.tokenizer, self.settings, self.batch_size = model, tokenizer, settings, batch_size
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token

    @classmethod
    def from_pretrained(
        cls, path: str, settings: SamplingSettings, batch_size: int = 64, dtype: str = "auto", device: str = ""
    ) -> TransformersSampler:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        tokenizer = AutoTokenizer.from_pretrained(path)
        model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype).to(device)
        return cls(model, tokenizer, settings, batch_size)

    def encode(self, prompt: Prompt) -> dict[str, torch.Tensor]:
        """Token ids of a prompt; a chat prompt through the chat template (which adds its own special tokens)."""
        ids = torch.tensor([prompt_token_ids(self.tokenizer, prompt)], device=self.model.device)
        return {"input_ids": ids, "attention_mask": torch.ones_like(ids)}

    @torch.no_grad()
    def sample(self, prompts: Sequence[Prompt], indices: Sequence[int]) -> list[list[str]]:
        was_training = self.model.training
        self.model.eval()
        try:
            return [self._sample_one(self.encode(p), i) for p, i in zip(prompts, indices, strict=True)]
        finally:
            self.model.train(was_training)

    def _sample_one(self, encoded: dict[str, torch.Tensor], index: int) -> list[str]:
        s = self.settings
        texts: list[str] = []
        with torch.random.fork_rng(devices=[self.model.device] if self.model.device.type == "cuda" else []):
            torch.manual_seed(s.problem_seed(index))
            while len(texts) < s.num_samples:
                count = min(self.batch_size, s.num_samples - len(texts))
                output = self.model.generate(
                    **encoded,
                    do_sample=True,
                    temperature=s.temperature,
                    top_p=s.top_p,
                    top_k=s.top_k,
                    max_new_tokens=s.max_new_tokens,
                    num_return_sequences=count,
                    pad_token_id=self.tokenizer.pad_token_id,
                )
                texts += self.tokenizer.batch_decode(
                    output[:, encoded["input_ids"].shape[1] :], skip_special_tokens=True
                )
        return texts


def as_completions(prompt: Prompt, texts: Sequence[Any]) -> list[Any]:
    """Completions in the format TRL gives reward functions: assistant messages for chat prompts, else text;
    completions that are messages already (agents' episodes) as they are."""
    if isinstance(prompt, list):
        return [[{"role": "assistant", "content": t}] if isinstance(t, str) else t for t in texts]
    return list(texts)


__all__ = [
    "BACKENDS",
    "Prompt",
    "Sampler",
    "SamplingSettings",
    "TrainerVLLMSampler",
    "TransformersSampler",
    "VLLMSampler",
    "as_completions",
    "choose_backend",
    "prompt_token_ids",
    "trainer_engine",
    "vllm_sampling_kwargs",
]
