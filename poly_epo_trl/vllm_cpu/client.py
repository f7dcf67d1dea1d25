"""``trl vllm-serve`` weight sync for a trainer on CPU (item 4 of ``poly_epo_trl.vllm_cpu``)."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from trl.generation.vllm_client import VLLMClient


class FileSyncVLLMClient(VLLMClient):
    """TRL's client of ``trl vllm-serve`` for a trainer on CPU: weights go through a safetensors file in a private
    temporary folder and the server's ``reload_weights`` (see the module docstring), instead of NCCL."""

    def init_communicator(self, device: Any = 0) -> None:
        self.sync_folder = Path(tempfile.mkdtemp(prefix="poly-epo-weights-"))
        atexit.register(self.close_communicator)

    def _start_weight_update(self) -> None:
        self._pending: dict[str, Any] = {}

    def _finish_weight_update(self) -> None:
        from safetensors.torch import save_file

        weights, self._pending = self._pending, {}
        if not weights:
            return
        partial = self.sync_folder / "model.safetensors.partial"
        save_file(weights, str(partial))
        os.replace(partial, self.sync_folder / "model.safetensors")
        self._post(
            f"{self.base_url}/collective_rpc",
            json={"method": "reload_weights", "kwargs": {"weights_path": str(self.sync_folder)}},
        )

    def update_named_params(self, metadata: list, named_params: Iterator[tuple[str, Any]]) -> None:
        if not self._updating_weights:
            self._start_weight_update()
        for name, tensor in named_params:
            self._pending[name] = tensor.detach().to("cpu", copy=True).contiguous()
        if not self._updating_weights:
            self._finish_weight_update()

    def close_communicator(self) -> None:
        if getattr(self, "sync_folder", None) is not None:
            shutil.rmtree(self.sync_folder, ignore_errors=True)
            self.sync_folder = None
