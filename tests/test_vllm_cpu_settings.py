"""``poly_epo_trl.vllm_cpu``'s choices that need no vLLM to check: where each applies and where it does nothing."""

from __future__ import annotations

import os

import pytest

from poly_epo_trl import vllm_cpu


@pytest.fixture
def cpu_build(monkeypatch):
    """As if vLLM's CPU build were installed, with vLLM's multiprocessing switch unset."""
    monkeypatch.setattr(vllm_cpu, "cpu_distribution_version", lambda: "0.30.0")
    unset(monkeypatch)


def unset(monkeypatch) -> None:
    """vLLM's switch unset for the test, and restored after it whatever the test sets (setenv records it)."""
    monkeypatch.setenv(vllm_cpu.MULTIPROCESSING, "")
    monkeypatch.delenv(vllm_cpu.MULTIPROCESSING)


def test_the_cpu_build_runs_an_offline_engine_in_the_callers_process(cpu_build):
    assert vllm_cpu.in_process_engine() is True
    assert os.environ[vllm_cpu.MULTIPROCESSING] == "0"
    assert vllm_cpu.seeded_engine_kwargs() == {"enable_chunked_prefill": False}


def test_a_users_own_multiprocessing_setting_is_kept(cpu_build, monkeypatch):
    monkeypatch.setenv(vllm_cpu.MULTIPROCESSING, "1")
    assert vllm_cpu.in_process_engine() is False
    assert os.environ[vllm_cpu.MULTIPROCESSING] == "1"


def test_elsewhere_nothing_is_set(monkeypatch):
    monkeypatch.setattr(vllm_cpu, "cpu_distribution_version", lambda: None)
    unset(monkeypatch)
    assert vllm_cpu.in_process_engine() is False and vllm_cpu.seeded_engine_kwargs() == {}
    assert vllm_cpu.MULTIPROCESSING not in os.environ
