"""One training run with colocated vLLM generation, in its own process (a colocated engine owns its process's
torch.distributed group).

``python vllm_colocate_run.py <out_dir> <trainer> <lora 0|1> <vllm_dtype> [eval]`` trains the tiny model two steps,
syncs the weights once more as TRL does before a generation, and writes ``result.json``: the per-step log, and the mean
|log p| difference of fixed texts between the vLLM engine and the trained model, and between the engine and the
initial model; with ``eval``, the held-out evaluation runs after every step, and ``loaded_after_training`` is the
step whose weights the engine last loaded.

``python vllm_colocate_run.py <out_dir> <trainer> <lora> <vllm_dtype> <port>`` does the same with generation by the
``trl vllm-serve`` on that port (serving ``<out_dir>/model``, which ``python vllm_colocate_run.py <out_dir>
save-model`` writes), log-probs from the server.

Under ``accelerate launch`` with several processes (each with its own colocated engine) write ``<out_dir>/model``
first (``save-model``); each process writes ``result_rank<r>.json``, with the engine that wrapped the model.

``python vllm_colocate_run.py <out_dir> unpatched`` builds the engine as TRL does but without
``vllm_cpu.keep_linear_weights`` and writes what loading one weight into it raised (``{"raised": ...}``), whether the
engine kept that layer's weight, and, where it did, why vLLM's oneDNN GEMM does not take it (None where the engine
dropped the weight, or where oneDNN would take it)."""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path

import torch
from tiny import toy_dataset
from transformers import AutoModelForCausalLM

from poly_epo_trl import GRPODivTrainer, PolyEPOConfig, PolyEPOTrainer
from poly_epo_trl.evaluation.callback import PassAtKCallback
from poly_epo_trl.tasks.sum_pair import make_prompt, sum_pair_reward
from poly_epo_trl.tasks.sum_pair.tiny import build_char_tokenizer, build_tiny_model
from poly_epo_trl.trainer.engines import engine_of


class UCPOTrainer(PolyEPOTrainer):
    """UCPO (which reads each completion's sampling log-probability through the log-prob channel), recording at each
    loss the door's sums and TRL's old_per_token_logps (the policy at the step the batch was sampled, which TRL
    computes under vLLM) summed over the completion mask, by completion text."""

    method_name = "ucpo"

    def _compute_loss(self, model, inputs):
        mask = inputs["completion_mask"]
        sums = (inputs["old_per_token_logps"] * mask).sum(1).tolist()
        prompts = [ids[m.bool()].tolist() for ids, m in zip(inputs["prompt_ids"], inputs["prompt_mask"], strict=True)]
        completions = [ids[: int(n)].tolist() for ids, n in zip(inputs["completion_ids"], mask.sum(1), strict=True)]
        keys = [(tuple(p), tuple(c)) for p, c in zip(prompts, completions, strict=True)]
        door = dict(zip(self.door_keys, self.step.batch.sequence_logprobs.flatten().tolist(), strict=True))
        gaps = [abs(door[key] - summed) for key, summed in zip(keys, sums, strict=True)]
        self.door_gaps = [*getattr(self, "door_gaps", []), *gaps]
        return super()._compute_loss(model, inputs)

    def _calculate_rewards(self, *args, **kwargs):
        rewards = super()._calculate_rewards(*args, **kwargs)
        generated = self.step.generated  # one process: the batch's rows, in the door's order
        pairs = zip(generated.prompt_ids, generated.completion_ids, strict=True)
        self.door_keys = [(tuple(p), tuple(c)) for p, c in pairs]
        return rewards


TRAINERS = {"poly_epo": PolyEPOTrainer, "grpo_div": GRPODivTrainer, "ucpo": UCPOTrainer}
TEXTS = [make_prompt(s) + answer for s, answer in ((23, "11+12"), (40, "1+39"), (31, "30+1"))]


def digit_share(completions: list[str], **kwargs) -> list[float]:
    """A reward the random tiny model earns unevenly (the toy task's is 0 for it): the share of digits."""
    return [sum(c.isdigit() for c in text) / max(len(text), 1) for text in completions]


def first_character_judge(prompt: str, completions: list[str]) -> list[int]:
    """Strategies of the random tiny model (the toy task's judge finds none): its first character."""
    return [ord(text[0]) % 7 if text else 0 for text in completions]


def save_vllm_sized_model(directory: Path) -> Path:
    """The toy task's tiny model with a head size vLLM's CPU attention takes (32)."""
    from poly_epo_trl.tasks.sum_pair import ALPHABET

    torch.manual_seed(0)
    tokenizer = build_char_tokenizer(ALPHABET)
    build_tiny_model(tokenizer, hidden_size=64, num_layers=2, num_heads=2).save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


def text_logprobs(model, tokenizer, texts: list[str]) -> list[list[float]]:
    """log p(token_t | tokens_<t) for t >= 1 of each text under a transformers model."""
    rows = []
    with torch.no_grad():
        for text in texts:
            ids = torch.tensor([tokenizer(text)["input_ids"]])
            logits = model(input_ids=ids).logits.float().log_softmax(-1)[0, :-1]
            rows.append(logits.gather(1, ids[0, 1:, None])[:, 0].tolist())
    return rows


def engine_logprobs(llm, tokenizer, texts: list[str]) -> list[list[float]]:
    """The same log-probs under the vLLM engine (prompt log-probs of the texts)."""
    from vllm import SamplingParams

    prompts = [{"prompt_token_ids": tokenizer(t)["input_ids"]} for t in texts]
    outputs = llm.generate(prompts, SamplingParams(max_tokens=1, prompt_logprobs=0), use_tqdm=False)
    rows = []
    for prompt, output in zip(prompts, outputs, strict=True):
        ids = prompt["prompt_token_ids"]
        rows.append([output.prompt_logprobs[t][ids[t]].logprob for t in range(1, len(ids))])
    return rows


def server_logprobs(base_url: str, tokenizer, texts: list[str]) -> list[list[float]]:
    """The same log-probs from a vLLM server (``/v1/completions`` with prompt log-probs of the token ids)."""
    import requests

    rows = []
    for text in texts:
        ids = tokenizer(text)["input_ids"]
        body = {"prompt": ids, "max_tokens": 1, "prompt_logprobs": 0}
        choice = requests.post(f"{base_url}/v1/completions", json=body, timeout=60).json()["choices"][0]
        rows.append([choice["prompt_logprobs"][t][str(ids[t])]["logprob"] for t in range(1, len(ids))])
    return rows


def mean_abs_difference(a: list[list[float]], b: list[list[float]]) -> float:
    pairs = [(x, y) for row_a, row_b in zip(a, b, strict=True) for x, y in zip(row_a, row_b, strict=True)]
    return sum(abs(x - y) for x, y in pairs) / len(pairs)


def load_weight_unpatched(out: Path) -> None:
    import os

    from vllm import LLM

    model_dir = save_vllm_sized_model(out / "model")
    os.environ.update(RANK="0", LOCAL_RANK="0", WORLD_SIZE="1", MASTER_ADDR="127.0.0.1", MASTER_PORT="29531")
    llm = LLM(
        model=str(model_dir),
        distributed_executor_backend="external_launcher",
        gpu_memory_utilization=0.15,
        max_model_len=64,
        enforce_eager=True,
    )
    weight = AutoModelForCausalLM.from_pretrained(model_dir).model.layers[0].self_attn.o_proj.weight
    model = llm.llm_engine.model_executor.driver_worker.model_runner.model
    engine_weight = model.model.layers[0].self_attn.o_proj.weight
    kept = engine_weight.numel() > 0  # vLLM's torch-linear fallback keeps it
    onednn = onednn_on(engine_weight.detach().clone()) if kept else None
    try:
        model.load_weights([("model.layers.0.self_attn.o_proj.weight", weight.detach())])
        raised = None
    except Exception as error:
        raised = f"{type(error).__name__}: {error}"
    (out / "result.json").write_text(json.dumps({"raised": raised, "weight_kept": kept, "onednn": onednn}))


def onednn_on(weight: torch.Tensor) -> str | None:
    """Why vLLM's oneDNN GEMM does not take ``weight`` (the engine's, in the engine's dtype) on this CPU (what
    creating one raised), or None where it does."""
    from vllm import _custom_ops as ops

    if not ops._supports_onednn:
        return "this vLLM build has no oneDNN kernels"
    try:
        ops.create_onednn_mm(weight.t(), 32)
    except RuntimeError as error:
        return f"creating a {weight.dtype} oneDNN matmul raised '{str(error).split('. ')[0]}'"
    return None


def main(out: Path, trainer_name: str, lora: bool, vllm_dtype: str, server_port: int | None, evaluate: bool) -> None:
    model_dir = out / "model"
    if server_port is None and not (model_dir / "config.json").exists():  # several processes: written beforehand
        save_vllm_sized_model(model_dir)
    args = PolyEPOConfig(
        output_dir=str(out / "run"),
        per_device_train_batch_size=8,
        num_generations=4,
        set_size=2,
        max_completion_length=6,
        max_steps=2,
        learning_rate=5e-2 if lora else 1e-2,
        logging_steps=1,
        report_to="none",
        save_strategy="no",
        use_cpu=True,
        seed=0,
        bf16=False,
        activation_checkpointing=False,
        use_vllm=True,
        vllm_mode="server" if server_port else "colocate",
        vllm_server_base_url=f"http://127.0.0.1:{server_port}" if server_port else None,
        vllm_server_timeout=120,
        vllm_gpu_memory_utilization=0.15,
        vllm_max_model_length=64,
        vllm_dtype=vllm_dtype,
        vllm_enforce_eager=True,
    )
    peft_config = None
    if lora:
        from peft import LoraConfig

        peft_config = LoraConfig(r=8, lora_alpha=16, target_modules=["q_proj", "v_proj", "down_proj"])
    trainer = TRAINERS[trainer_name](
        model=str(model_dir),
        reward_funcs=[sum_pair_reward, digit_share],
        args=args,
        train_dataset=toy_dataset(),
        judge=first_character_judge,
        peft_config=peft_config,
    )
    if evaluate:  # the held-out evaluation every step, on one problem: a second process has none of its own
        rows = [{"prompt": make_prompt(21), "answer": "21"}]
        trainer.add_callback(PassAtKCallback.for_trainer(trainer, rows, 1, num_samples=4, judge=first_character_judge))
    trainer.train()
    loaded_after_training = trainer._last_loaded_step
    generation = trainer.vllm_generation
    generation.sync_weights()  # what TRL does before the next generation
    tokenizer = trainer.processing_class
    model = trainer.model
    if lora:
        model = model.merge_and_unload()
    initial = AutoModelForCausalLM.from_pretrained(model_dir)
    if server_port:
        engine, engine_dtype = server_logprobs(f"http://127.0.0.1:{server_port}", tokenizer, TEXTS), "server"
    else:
        engine = engine_logprobs(generation.llm, tokenizer, TEXTS)
        engine_dtype = str(generation.llm.llm_engine.model_config.dtype)
    with gathered(trainer, model, initial):  # ZeRO-3: each process holds a partition of every weight
        trained = text_logprobs(model.eval(), tokenizer, TEXTS)
        before = text_logprobs(initial.eval(), tokenizer, TEXTS)
    result = {
        "log_history": trainer.state.log_history,
        "engine_vs_trained": mean_abs_difference(engine, trained),
        "engine_vs_initial": mean_abs_difference(engine, before),
        "engine_dtype": engine_dtype,
        "engine": engine_of(trainer.accelerator).name,
        "judge_calls": len(trainer.last_set_batch.completions) if trainer.last_set_batch else 0,
        "loaded_after_training": loaded_after_training,
        "door_gaps": getattr(trainer, "door_gaps", []),
    }
    rank = trainer.accelerator.process_index
    (out / ("result.json" if trainer.accelerator.num_processes == 1 else f"result_rank{rank}.json")).write_text(
        json.dumps(result)
    )


def gathered(trainer, *models):
    """The models' whole weights on every process for the block under ZeRO-3 (which partitions every model loaded
    while it is on, the initial one too), or nothing to do."""
    if trainer.is_deepspeed_enabled and trainer.accelerator.state.deepspeed_plugin.zero_stage == 3:
        import deepspeed

        return deepspeed.zero.GatheredParameters([p for model in models for p in model.parameters()])
    return contextlib.nullcontext()


if __name__ == "__main__":
    if sys.argv[2] == "unpatched":
        load_weight_unpatched(Path(sys.argv[1]))
    elif sys.argv[2] == "save-model":
        saved = save_vllm_sized_model(Path(sys.argv[1]) / "model")
        (Path(sys.argv[1]) / "result.json").write_text(json.dumps({"model": str(saved)}))
    else:
        port = int(sys.argv[5]) if len(sys.argv) > 5 and sys.argv[5].isdigit() else None
        main(Path(sys.argv[1]), sys.argv[2], sys.argv[3] == "1", sys.argv[4], port, "eval" in sys.argv[5:])
