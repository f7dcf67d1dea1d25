"""The agent task's tokenizer: byte-level BPE trained on the task's own rendered conversations (TRL's Qwen3 chat
template, so TRL's tool loop and response parser accept it), digits kept one token each."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import trl
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

QWEN3_TEMPLATE = (Path(trl.__file__).parent / "chat_templates" / "qwen3.jinja").read_text()
SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
TEXT_TOKENS = ["<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>", "<think>", "</think>"]


def train_tokenizer(texts: Iterable[str], vocab_size: int = 600) -> PreTrainedTokenizerFast:
    """Byte-level BPE over ``texts`` with Qwen3's special and tool tokens and TRL's Qwen3 chat template."""
    backend = Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    backend.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL + TEXT_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    backend.train_from_iterator(texts, trainer)
    return qwen3_chat_tokenizer(backend, model_max_length=512)


def qwen3_chat_tokenizer(backend: Tokenizer, model_max_length: int) -> PreTrainedTokenizerFast:
    """``backend`` as a transformers tokenizer with Qwen3's end, padding and turn tokens and TRL's Qwen3 chat
    template."""
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        additional_special_tokens=["<|im_start|>"],
        clean_up_tokenization_spaces=False,
    )
    tokenizer.chat_template = QWEN3_TEMPLATE
    tokenizer.model_max_length = model_max_length
    return tokenizer
