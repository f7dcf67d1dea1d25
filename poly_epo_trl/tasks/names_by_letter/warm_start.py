"""The names_by_letter task's warm start: a pretrained LM that answers the bare prompt, with answers of its own.

The bare model, asked ``A country starting with L:``, mostly goes on talking (held-out pass@1 about 0.03). Shown
three solved examples first (of categories outside the task: a fruit, a colour, an animal), it answers with a name,
and that name is its own belief. The warm start keeps the model's few-shot answers to the *training* prompts
(``samples`` per prompt) that are right (rejection sampling; ``keep="named"`` keeps every short name instead, right
or wrong) as the targets of a short supervised fine-tune (TRL's ``SFTTrainer``, loss on the answer only) on the bare
prompt: a start that already answers, as the paper's base model does. The held-out prompts are never seen.

    python -m poly_epo_trl.tasks.names_by_letter.warm_start [--model builtin:smollm2] --out DIR
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch

from ...models import resolve_model
from .names import is_correct, name_key, split_prompts

KEEP = ("named", "correct")

FEW_SHOT = (
    "Names by their first letter.\n"
    "A fruit starting with B: Banana\n"
    "A colour starting with R: Red\n"
    "An animal starting with D: Dog\n"
)
BUILD_INFO = "warm_start.json"


@dataclass(frozen=True)
class WarmStartSettings:
    """How the warm start is made: ``samples`` few-shot answers per training prompt (seeded), those ``keep`` keeps
    ("named": every answer that is a short name, right or wrong; "correct": the right ones only, as rejection
    sampling keeps them), then ``epochs`` of supervised fine-tuning at ``learning_rate`` (cosine,
    ``warmup_steps``), ``batch_size`` rows a step."""

    samples: int = 32
    keep: str = "correct"
    seed: int = 0
    epochs: int = 2
    learning_rate: float = 5e-5
    batch_size: int = 16
    warmup_steps: int = 5


def few_shot_answers(model: Any, tokenizer: Any, settings: WarmStartSettings) -> list[dict[str, str]]:
    """The model's own answers to each training prompt after ``FEW_SHOT``, as SFT rows ``{prompt, completion}``:
    answers that are a short name ending its line (``name_key``), right or wrong, or with ``keep="correct"`` the
    right ones only."""
    if settings.keep not in KEEP:
        raise ValueError(f"keep={settings.keep!r}: use one of {KEEP}.")
    rows = []
    for index, prompt in enumerate(split_prompts("train")):
        encoded = tokenizer(FEW_SHOT + prompt, return_tensors="pt").to(model.device)
        torch.manual_seed(settings.seed * 1_000_003 + index)
        with torch.no_grad():
            output = model.generate(
                **encoded,
                do_sample=True,
                temperature=1.0,
                top_k=0,
                top_p=1.0,
                max_new_tokens=10,
                num_return_sequences=settings.samples,
                pad_token_id=tokenizer.pad_token_id or tokenizer.eos_token_id,
            )
        texts = tokenizer.batch_decode(output[:, encoded["input_ids"].shape[1] :], skip_special_tokens=True)
        for text in texts:
            line, ended, _ = text.partition("\n")
            named = ended and line.strip() and name_key(prompt, line) is not None
            if named and (settings.keep == "named" or is_correct(prompt, line)):
                rows.append({"prompt": prompt, "completion": f" {line.strip()}"})
    return rows


def build(base: str, out: Path, settings: WarmStartSettings = WarmStartSettings(), name: str | None = None) -> Path:
    """The warm start of ``base`` (a folder or Hub id; ``name``: how the recipe named it), saved with its tokenizer to
    ``out``, and ``warm_start.json`` beside it (the model, the settings and the rows kept)."""
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import SFTConfig, SFTTrainer

    start = time.perf_counter()
    cuda = torch.cuda.is_available()
    tokenizer = AutoTokenizer.from_pretrained(base)
    model = AutoModelForCausalLM.from_pretrained(base, dtype=torch.bfloat16 if cuda else torch.float32)
    model.to("cuda" if cuda else "cpu").eval()
    rows = few_shot_answers(model, tokenizer, settings)
    if not rows:
        raise ValueError(f"{base} gave no well-formed few-shot answer: it cannot be warm-started on this task.")
    print(f"warm start: {len(rows)} few-shot answers kept ({time.perf_counter() - start:.0f} s)", flush=True)
    config = SFTConfig(
        output_dir=str(out),
        num_train_epochs=settings.epochs,
        per_device_train_batch_size=settings.batch_size,
        learning_rate=settings.learning_rate,
        lr_scheduler_type="cosine",
        warmup_steps=settings.warmup_steps,
        completion_only_loss=True,
        max_length=64,
        seed=settings.seed,
        save_strategy="no",
        report_to="none",
        logging_steps=10_000,
        disable_tqdm=True,
        use_cpu=not cuda,
        bf16=cuda,
    )
    dataset = Dataset.from_list(rows).shuffle(seed=settings.seed)
    trainer = SFTTrainer(model=model, args=config, train_dataset=dataset, processing_class=tokenizer)
    result = trainer.train()
    trainer.save_model(str(out))
    tokenizer.save_pretrained(str(out))
    info = {"base": name or base, "rows": len(rows), "train_loss": result.training_loss, **asdict(settings)}
    info["seconds"] = time.perf_counter() - start
    (out / BUILD_INFO).write_text(json.dumps(info, indent=2))
    print(f"warm start: saved to {out} ({info['seconds']:.0f} s, SFT loss {result.training_loss:.3f})", flush=True)
    return out


def built_with(folder: Path) -> dict[str, Any] | None:
    """What the warm start in ``folder`` was built from (``warm_start.json``), or None when there is none."""
    try:
        return json.loads((folder / BUILD_INFO).read_text())
    except (OSError, ValueError):
        return None


def cached_warm_start(
    base: str = "builtin:smollm2", folder: Path | None = None, settings: WarmStartSettings = WarmStartSettings()
) -> Path:
    """The warm start of ``base`` in ``folder`` (default ``$POLY_EPO_CACHE/smollm2-names-by-letter``, the cache
    being ``~/.cache/poly_epo_trl`` by default), built when the folder holds none of that model with these settings
    (into a folder of this process's own, moved into place when complete: concurrent builds cannot mix)."""
    cache = Path(os.environ.get("POLY_EPO_CACHE", Path.home() / ".cache" / "poly_epo_trl"))
    target = folder or cache / "smollm2-names-by-letter"
    info = built_with(target)
    if info is not None and info["base"] == base and all(info.get(k) == v for k, v in asdict(settings).items()):
        return target
    print(f"building the names_by_letter task's warm start of {base} into {target} (once)", flush=True)
    partial = target.with_name(f"{target.name}.partial-{os.getpid()}")
    try:
        build(resolve_model(base), partial, settings, name=base)
        shutil.rmtree(target, ignore_errors=True)  # another model's, or other settings'
        partial.rename(target)
    except OSError:
        if built_with(target) is None:
            raise
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return target


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="builtin:smollm2", help="the pretrained model (Hub id, folder, builtin:)")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--keep", choices=KEEP, default=WarmStartSettings.keep, help="which few-shot answers to keep")
    args = parser.parse_args()
    build(resolve_model(args.model), args.out, WarmStartSettings(keep=args.keep), name=args.model)


if __name__ == "__main__":
    main()
