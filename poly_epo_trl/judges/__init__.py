"""Clustering judges: label each completion of a group with a strategy id (100 = degenerate).

``base`` is the interface a judge implements (``acluster``, ``view``), ``pipeline`` what runs around it (its chain,
fallback, outage waits, a batch on the event loop of ``loop``), ``specs`` the one typed spec from recipe to request
(``JudgeSpec``, and the ``JUDGES`` registry of kinds), ``settings`` the judge settings a recipe gives (training,
evaluation and judge-agreement alike), ``metrics`` a step's judge metrics, ``http`` URL and secret helpers; the other
modules are the judges, the LM judges' prompts, ``resilience`` (retries, breaker, concurrency, per request),
``outage`` (waiting out a service that is down, per group), the cache and the errors."""

from ..text import last_boxed
from .answer import AnswerJudge, final_answer
from .anthropic import AnthropicJudge
from .base import ClusteringJudge, Clusters, normalize_labels
from .cache import JudgeCache
from .errors import (
    CircuitOpen,
    ConnectFailed,
    FatalJudgeError,
    GroupError,
    InvalidAnswer,
    JudgeError,
    JudgeFailing,
    JudgeOutage,
    JudgeTimeout,
    RateLimited,
    RequestRejected,
    ServerError,
    ServiceError,
)
from .http import redact_url, split_base_url
from .llm import STRUCTURED_OUTPUTS, LMJudge, LMOptions, Reply
from .loop import JudgeLoop
from .metrics import step_metrics
from .openai_server import OpenAICompatibleJudge, ServerOptions
from .outage import OutageWait
from .pipeline import FALLBACKS, PROBE, JudgePipeline, JudgeResult
from .prompts import JudgeTemplate, answer_schema, extract_json, parse_cluster_ids
from .resilience import AdaptiveConcurrency, CircuitBreaker, RetryPolicy
from .settings import JudgeSettings
from .simple import CallableJudge, DistinctJudge, clusters_by
from .specs import JUDGE_SPECS, JUDGES, JudgeSpec, pipeline_of
from .transformers import TransformersJudge

__all__ = [
    "FALLBACKS",
    "JUDGES",
    "JUDGE_SPECS",
    "PROBE",
    "STRUCTURED_OUTPUTS",
    "AdaptiveConcurrency",
    "AnswerJudge",
    "AnthropicJudge",
    "CallableJudge",
    "CircuitBreaker",
    "CircuitOpen",
    "ClusteringJudge",
    "Clusters",
    "ConnectFailed",
    "DistinctJudge",
    "FatalJudgeError",
    "GroupError",
    "InvalidAnswer",
    "JudgeCache",
    "JudgeError",
    "JudgeFailing",
    "JudgeLoop",
    "JudgeOutage",
    "JudgePipeline",
    "JudgeResult",
    "JudgeSettings",
    "JudgeSpec",
    "JudgeTemplate",
    "JudgeTimeout",
    "LMJudge",
    "LMOptions",
    "OpenAICompatibleJudge",
    "OutageWait",
    "RateLimited",
    "Reply",
    "RequestRejected",
    "RetryPolicy",
    "ServerError",
    "ServerOptions",
    "ServiceError",
    "TransformersJudge",
    "answer_schema",
    "clusters_by",
    "extract_json",
    "final_answer",
    "last_boxed",
    "normalize_labels",
    "parse_cluster_ids",
    "pipeline_of",
    "redact_url",
    "split_base_url",
    "step_metrics",
]
