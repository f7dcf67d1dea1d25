"""Clustering judges: label each completion of a group with a strategy id (100 = degenerate).

``base`` is the interface and the batch loop, ``specs`` names judges for recipes (the ``JUDGES`` registry), the
other modules are the judges and the LM judges' prompts, resilience, cache and errors."""

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
    JudgeOutage,
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
from .specs import JUDGE_SPECS, JUDGES, JudgeOptions, resolve_judge

__all__ = [
    "FALLBACKS",
    "JUDGES",
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
    "JudgeOptions",
    "JudgeOutage",
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
    "split_base_url",
    "step_metrics",
]
