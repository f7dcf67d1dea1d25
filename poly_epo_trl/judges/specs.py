"""Judge specs, as recipes name judges: ``"answer"``, ``"openai:<url>/<model>"``, ``"a,b"`` for a chain, ...

Each kind is a factory in the ``JUDGES`` registry: ``factory(arg, options)`` builds the judge of ``"kind:arg"``.
A new kind of judge is one decorated factory here (or in your own module, imported before the recipe is read).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..constants import DEGENERATE_CLUSTER_ID
from ..models import MODELS
from ..registry import Registry, import_callable
from ..text import TOOL_RESULT_CHARS
from .answer import AnswerJudge
from .base import ClusteringJudge
from .claude import AnthropicJudge
from .http import redact_url, split_base_url
from .local_lm import TransformersJudge
from .openai_server import OpenAICompatibleJudge
from .simple import CallableJudge, DistinctJudge


@dataclass
class JudgeOptions:
    """What a factory may use: ``common`` goes to every judge, ``lm`` to language-model judges, ``server`` to the
    OpenAI-compatible one."""

    common: dict[str, Any]
    lm: dict[str, Any] = field(default_factory=dict)
    server: dict[str, Any] = field(default_factory=dict)


JudgeFactory = Callable[[str, JudgeOptions], ClusteringJudge]
JUDGES: Registry[JudgeFactory] = Registry("judge")
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


@JUDGES.register("answer")
def answer_judge(arg: str, options: JudgeOptions) -> ClusteringJudge:
    return AnswerJudge(mode=arg or "auto", **options.common)


@JUDGES.register("distinct")
def distinct_judge(arg: str, options: JudgeOptions) -> ClusteringJudge:
    return DistinctJudge(**options.common)


@JUDGES.register("python")
def python_judge(arg: str, options: JudgeOptions) -> ClusteringJudge:
    return CallableJudge(import_callable(arg, "judge", "use 'python:package.module:function'."), **options.common)


@JUDGES.register("embedding")
def embedding_judge(arg: str, options: JudgeOptions) -> ClusteringJudge:
    from .embedding import EmbeddingJudge

    return EmbeddingJudge(model=arg or None, **options.common)


@JUDGES.register("anthropic")
def anthropic_judge(arg: str, options: JudgeOptions) -> ClusteringJudge:
    return AnthropicJudge(**({"model": arg} if arg else {}), **options.common, **options.lm)


@JUDGES.register("openai")
def openai_judge(arg: str, options: JudgeOptions) -> ClusteringJudge:
    """``openai:<base_url>/<model>``, ``openai:<base_url>`` with ``server["model"]``, or ``openai`` with
    ``server["base_url"]`` (and ``server["model"]``, else the server's only model)."""
    server = options.server
    extra = {key: value for key, value in server.items() if key not in ("base_url", "model")}
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
    return OpenAICompatibleJudge(base_url, model, **extra, **options.common, **options.lm)


@JUDGES.register("transformers")
def transformers_judge(arg: str, options: JudgeOptions) -> ClusteringJudge:
    """``transformers:<path>``, or the name of a built-in model (``transformers:smollm2``)."""
    if not arg:
        raise ValueError("Judge spec 'transformers' needs a model: 'transformers:<path>' or 'transformers:smollm2'.")
    path = MODELS.get(arg)() if arg in MODELS else arg
    return TransformersJudge(path, **options.common, **options.lm)


def parse_judge_spec(spec: str, options: JudgeOptions) -> ClusteringJudge:
    """One judge of a spec: ``kind`` or ``kind:arg``."""
    kind, _, arg = spec.strip().partition(":")
    if kind not in JUDGES:
        raise ValueError(
            f"Unknown judge spec {spec!r}: the kinds are {JUDGES.names()} ({', '.join(JUDGE_SPECS)}); join several "
            "with ',' for a chain."
        )
    return JUDGES.get(kind)(arg, options)


def resolve_judge(
    judge: Any,
    *,
    max_concurrency: int = 32,
    degenerate_cluster_id: int = DEGENERATE_CLUSTER_ID,
    fallback: str | None = None,
    server: dict[str, Any] | None = None,
    tool_result_chars: int | None = TOOL_RESULT_CHARS,
    **lm_options: Any,
) -> ClusteringJudge:
    """A judge object, a plain callable ``judge(prompt, completions)``, or a spec string.

    Specs: see ``JUDGE_SPECS``; ``"a,b"`` tries judge a, then b for the groups a fails on. ``fallback`` applies
    when every judge of the chain failed; ``lm_options`` (template, cache_dir, retry, max_tokens, temperature,
    structured_output, ...) go to language-model judges only, ``server`` (base_url, model, api_key_env,
    extra_body, stream) to the OpenAI-compatible one only; ``tool_result_chars`` is how much of each tool result
    an agent's trajectory shows the judge (``text.trajectory_text``)."""
    common = {
        "max_concurrency": max_concurrency,
        "degenerate_cluster_id": degenerate_cluster_id,
        "tool_result_chars": tool_result_chars,
    }
    if isinstance(judge, ClusteringJudge):
        return judge
    if isinstance(judge, str):
        options = JudgeOptions(common, lm_options, server or {})
        judges = [parse_judge_spec(part, options) for part in judge.split(",") if part.strip()]
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
