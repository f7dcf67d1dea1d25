"""Test-wide settings: offline, one torch thread (two threads on two cores slow a step dramatically), and the
shared helpers (``tests/helpers``) importable by name."""

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "helpers"))  # and for the processes tests start:
os.environ["PYTHONPATH"] = os.pathsep.join([sys.path[0], *filter(None, [os.environ.get("PYTHONPATH")])])

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("WANDB_MODE", "disabled")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import torch

torch.set_num_threads(1)


import pytest  # noqa: E402


@pytest.fixture
def api_key(monkeypatch):
    """An Anthropic key in the environment (judges at the HTTP boundary; never sent anywhere)."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret-key-0123456789")
    return "sk-ant-secret-key-0123456789"
