"""``python vllm_seeded_run.py <out_dir> <bare|workaround>``: seeded sampling (``VLLMSampler``, a seed per problem) on
the tiny model with every prefill split in chunks (a 4-token budget). ``bare`` builds the engine without
``vllm_cpu.seeded_engine_kwargs``; writes ``result.json``: whether chunked prefill was on, whether the engine ran in
this process, and what sampling raised (in-process, the engine's own error) or the samples."""

import json
import sys
from pathlib import Path

from vllm_colocate_run import save_vllm_sized_model

from poly_epo_trl import vllm_cpu
from poly_epo_trl.evaluation import sampling
from poly_epo_trl.evaluation.sampling import SamplingSettings, VLLMSampler
from poly_epo_trl.tasks.sum_pair import make_prompt


def main(out: Path, mode: str) -> None:
    model = save_vllm_sized_model(out / "model")
    if mode == "bare":
        sampling.seeded_engine_kwargs = dict
    forced = {"enable_chunked_prefill": True, "max_num_batched_tokens": 4} if mode == "bare" else {}
    sampler = VLLMSampler(
        str(model), SamplingSettings(num_samples=4, max_new_tokens=4, seed=0), dtype="float32",
        gpu_memory_utilization=0.15, max_model_len=64, enforce_eager=True, **forced,
    )  # fmt: skip
    result = {
        "chunked_prefill": sampler.llm.llm_engine.vllm_config.scheduler_config.enable_chunked_prefill,
        "in_process": vllm_cpu.runs_in_process(sampler.llm),
    }
    try:
        result["samples"] = sampler.sample([make_prompt(total) for total in (23, 31, 40)], range(3))
    except Exception as error:
        result["raised"] = f"{type(error).__name__}: {error}"
    (out / "result.json").write_text(json.dumps(result))


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2])
