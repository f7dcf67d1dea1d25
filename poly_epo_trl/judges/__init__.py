"""Clustering judges: label each completion of a group with a strategy id (100 = degenerate).

``base`` is the interface (a group through the judge, its chain and its fallback), ``loop`` the event-loop thread
where judges do their I/O, ``specs`` names judges for recipes (the ``JUDGES`` registry), ``settings`` the judge
settings a recipe gives (training, evaluation and judge-agreement alike), ``metrics`` a step's judge metrics,
``http`` URL and secret helpers; the other modules are the judges and the LM judges' prompts, resilience (retries,
breaker, concurrency, outages), cache and errors."""

from ..text import last_boxed
from .answer import AnswerJudge, final_answer
from .base import FALLBACKS, PROBE, ClusteringJudge, Clusters, JudgeResult, normalize_labels
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
    JudgeOutage,
    JudgeTimeout,
    RateLimited,
    RequestRejected,
    ServerError,
    ServiceError,
)
from .http import redact_url, split_base_url
from .llm import STRUCTURED_OUTPUTS, LMJudge, Reply
from .local_lm import TransformersJudge
from .loop import JudgeLoop
from .metrics import step_metrics
from .openai_server import OpenAICompatibleJudge
from .prompts import JudgeTemplate, answer_schema, extract_json, parse_cluster_ids
from .resilience import AdaptiveConcurrency, CircuitBreaker, OutageWait, RetryPolicy
from .settings import JudgeSettings
from .simple import CallableJudge, DistinctJudge, clusters_by
from .specs import JUDGE_SPECS, JUDGES, JudgeOptions, resolve_judge

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
    "JudgeOptions",
    "JudgeOutage",
    "JudgeResult",
    "JudgeSettings",
    "JudgeTemplate",
    "JudgeTimeout",
    "LMJudge",
    "OpenAICompatibleJudge",
    "OutageWait",
    "RateLimited",
    "Reply",
    "RequestRejected",
    "RetryPolicy",
    "ServerError",
    "ServiceError",
    "TransformersJudge",
    "answer_schema",
    "clusters_by",
    "extract_json",
    "final_answer",
    "last_boxed",
    "normalize_labels",
    "parse_cluster_ids",
    "redact_url",
    "resolve_judge",
    "split_base_url",
    "step_metrics",
]
