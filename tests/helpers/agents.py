"""Offline pieces for agent tests: a tokenizer with the Qwen3 chat template TRL ships (so TRL's tool-calling loop
and response parser accept it), a tiny Qwen3 model, and a scripted policy that plays the model's part.

A randomly initialised tiny model never writes a well-formed tool call, so, as TRL's own agent tests do, generation
is replaced: ``scripted_generate`` reads each row's rendered conversation and continues it from a seeded script
(a tool call, a malformed call, an answer, ...). Everything after generation (parsing, running the tools, the
environments, rewards, the judge, advantages, the loss) is the real code.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

import torch
import trl
from PIL import Image
from tokenizers import Tokenizer, decoders, models, pre_tokenizers
from transformers import (
    PreTrainedTokenizerFast,
    Qwen2VLImageProcessorPil,
    Qwen3VLConfig,
    Qwen3VLForConditionalGeneration,
    Qwen3VLProcessor,
)

from poly_epo_trl.tasks.goldbach_agent.tiny import TEXT_TOKENS, qwen3_chat_tokenizer
from poly_epo_trl.tasks.sum_pair.tiny import build_tiny_model


def byte_symbols() -> list[str]:
    """The 256 byte-level symbols (GPT-2's mapping from bytes to printable characters)."""
    printable = [*range(ord("!"), ord("~") + 1), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    extra = iter(range(256, 512))
    return [chr(b) if b in printable else chr(next(extra)) for b in range(256)]


def build_tool_tokenizer() -> PreTrainedTokenizerFast:
    """Byte-level tokens (no merges), Qwen3's special and tool tokens, and TRL's Qwen3 chat template."""
    backend = Tokenizer(models.BPE(vocab={s: i for i, s in enumerate(byte_symbols())}, merges=[]))
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    tokenizer = qwen3_chat_tokenizer(backend, model_max_length=4096)
    tokenizer.add_tokens(TEXT_TOKENS)
    return tokenizer


def save_tool_model(directory: Path, seed: int = 0) -> Path:
    torch.manual_seed(seed)
    tokenizer = build_tool_tokenizer()
    model = build_tiny_model(tokenizer, hidden_size=32, num_layers=1, num_heads=2, max_positions=4096)
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


class ImageOnlyQwen3VLProcessor(Qwen3VLProcessor):
    """Qwen3-VL's processor without its video processor. transformers builds video processors on torchvision, and
    the only torchvision these machines can install (PyPI's) is built for CUDA torch and fails to import with the CPU
    build. Images, the only thing a tool returns here, go through Qwen3-VL's own image path (its PIL processor)."""

    @classmethod
    def get_attributes(cls) -> list[str]:
        return ["image_processor", "tokenizer"]


VISION_TOKENS = ["<|vision_start|>", "<|vision_end|>", "<|image_pad|>", "<|video_pad|>"]


def save_vision_tool_model(directory: Path, seed: int = 0) -> ImageOnlyQwen3VLProcessor:
    """A tiny Qwen3-VL (about 130k parameters, 16-pixel patches merged 2x2: a 32x32 image is one image token) saved
    to ``directory``, and its processor: the tool tokenizer with Qwen3-VL's vision tokens and TRL's Qwen3-VL chat
    template, which TRL's tool loop recognises."""
    template = (Path(trl.__file__).parent / "chat_templates" / "qwen3_vl.jinja").read_text()
    tokenizer = build_tool_tokenizer()
    tokenizer.add_special_tokens({"additional_special_tokens": ["<|im_start|>", *VISION_TOKENS]})
    tokenizer.chat_template = template
    pixels = {"shortest_edge": 32 * 32, "longest_edge": 64 * 64}
    image_processor = Qwen2VLImageProcessorPil(patch_size=16, merge_size=2, temporal_patch_size=2, size=pixels)
    processor = ImageOnlyQwen3VLProcessor(image_processor=image_processor, tokenizer=tokenizer, chat_template=template)
    names = ["vision_start", "vision_end", "image", "video"]
    ids = dict(zip(names, tokenizer.convert_tokens_to_ids(VISION_TOKENS), strict=True))
    text = dict(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=16,
        max_position_embeddings=4096,
        rope_parameters={"rope_type": "default", "rope_theta": 1e4, "mrope_section": [2, 3, 3]},
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    vision = dict(
        depth=1,
        hidden_size=32,
        intermediate_size=64,
        num_heads=2,
        patch_size=16,
        spatial_merge_size=2,
        temporal_patch_size=2,
        out_hidden_size=32,
        deepstack_visual_indexes=[0],
        num_position_embeddings=16,
    )
    torch.manual_seed(seed)
    config = Qwen3VLConfig(
        text_config=text,
        vision_config=vision,
        **{f"{name}_token_id": token for name, token in ids.items()},
    )
    Qwen3VLForConditionalGeneration(config).save_pretrained(directory)
    return processor


def tool_call(name: str, **arguments) -> str:
    """A Qwen3 tool call as the model writes it."""
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>"


MALFORMED = '<tool_call>\n{"name": "add", "arguments": {"n": \n</tool_call>'
Script = Callable[[random.Random, str, int], str]  # (rng, the rendered conversation, turn number) -> what to write


def scripted_generate(tokenizer, script: Script, seed: int = 0):
    """A stand-in for ``model.generate``: each left-padded row is decoded, ``script`` says what the model writes on
    that turn (0 the first, 1 after one tool result, ...), and the row comes back with it and an end of turn."""
    rng = random.Random(seed)

    def generate(input_ids: torch.Tensor, **kwargs) -> torch.Tensor:
        rows = []
        for row in input_ids.tolist():
            text = tokenizer.decode([t for t in row if t != tokenizer.pad_token_id])
            turn = text.count("<tool_response>")
            rows.append(tokenizer(script(rng, text, turn) + "<|im_end|>", add_special_tokens=False)["input_ids"])
        width = max(len(r) for r in rows)
        padded = [r + [tokenizer.pad_token_id] * (width - len(r)) for r in rows]
        return torch.cat([input_ids, torch.tensor(padded, device=input_ids.device)], dim=-1)

    return generate


def plan_script(plans: dict[str, list[str]], weights: list[float] | None = None) -> Script:
    """Each rollout follows one plan, drawn on its first turn: a list of what the model writes turn by turn (tool
    calls, then an answer). Later turns find their plan from the first thing the rollout wrote."""
    names = list(plans)

    def script(rng: random.Random, text: str, turn: int) -> str:
        if turn == 0:
            return plans[rng.choices(names, weights)[0]][0]
        first = text.split("<|im_start|>assistant\n")[1]
        steps = next(steps for steps in plans.values() if first.startswith(steps[0]))
        return steps[min(turn, len(steps) - 1)]

    return script


class Counter:
    """An environment: a counter that starts at 0; the task is to make it reach the row's ``target``."""

    def reset(self, target: int = 4, **kwargs) -> None:
        self.value, self.target = 0, target

    def add(self, n: int) -> int:
        """
        Add n to the counter.

        Args:
            n: The number to add.

        Returns:
            The counter's new value.
        """
        self.value += n
        return self.value

    def double(self) -> int:
        """
        Double the counter.

        Returns:
            The counter's new value.
        """
        self.value *= 2
        return self.value

    def get_reward(self) -> float:
        return float(self.value == self.target)


class Lamp:
    """A second environment: a lamp to switch on. Each reset's arguments (the row's columns) are recorded."""

    resets: ClassVar[list[dict]] = []

    def reset(self, target: int = 4, **kwargs) -> None:
        Lamp.resets.append({"target": target, **kwargs})
        self.on = False

    def switch(self) -> str:
        """
        Switch the lamp on.

        Returns:
            The lamp's state.
        """
        self.on = True
        return "on"

    def get_reward(self) -> float:
        return float(self.on)


class Dial:
    """An environment without ``get_reward``: its reward has to come from reward functions."""

    def reset(self, **kwargs) -> None:
        self.value = 0

    def turn(self) -> int:
        """
        Turn the dial one notch.

        Returns:
            The dial's position.
        """
        self.value += 1
        return self.value


class NoReset:
    """Not an environment: TRL starts each episode with ``reset``, which this class lacks."""


def shout(word: str) -> str:
    """
    Shout a word.

    Args:
        word: The word to shout.

    Returns:
        The word in capitals.
    """
    return word.upper()


def mumble(word):
    return word


NOTES_SEEN: list[str] = []


def note_reward(completions: list, note: list[str], **kwargs) -> list[float]:
    """A reward that records the ``note`` column it is given (a column a recipe keeps with keep_columns)."""
    NOTES_SEEN.extend(note)
    return [0.0] * len(completions)


class Easel:
    """An environment with a tool that returns an image: a 32x32 picture in the row's ``colour``. The task is to
    name the colour; the reward, the environment's, is whether the agent looked before answering."""

    COLOURS: ClassVar[dict[str, tuple[int, int, int]]] = {"red": (200, 20, 20), "blue": (20, 20, 200)}

    def reset(self, colour: str = "red", **kwargs) -> None:
        self.colour, self.looked = colour, False

    def look(self) -> list[dict]:
        """
        Look at the picture.

        Returns:
            The picture and its caption.
        """
        self.looked = True
        picture = Image.new("RGB", (32, 32), self.COLOURS[self.colour])
        return [{"type": "image", "image": picture}, {"type": "text", "text": "the picture"}]

    def get_reward(self) -> float:
        return float(self.looked)


EASEL_PLANS = {"look": [tool_call("look"), "It is red."], "guess": ["It is blue."]}

COUNTER_PLANS = {
    "add": [tool_call("add", n=4), "It is 4."],
    "add_double": [tool_call("add", n=2), tool_call("double"), "It is 4."],
    "double_add": [tool_call("double"), tool_call("add", n=4), "It is 4."],
    "wrong": [tool_call("add", n=1), "It is 1."],
    "no_tools": ["It is 4."],
    "malformed": [MALFORMED],
    "unknown_tool": [tool_call("triple", n=3), "It is 9."],
}
