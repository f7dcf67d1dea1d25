"""The judge settings a recipe gives, the same for training (``PolyEPOConfig``), ``poly-epo eval`` and
``poly-epo judge-agreement``: one set of ``judge_*`` fields with one set of checks, and ``make_judge`` to build the
judge they describe."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..recipe import json_mapping
from ..text import TOOL_RESULT_CHARS
from .http import check_url
from .llm import STRUCTURED_OUTPUTS, LMOptions
from .openai_server import ServerOptions
from .pipeline import FALLBACKS, JudgePipeline
from .prompts import BUILTIN_TEMPLATES
from .resilience import RetryPolicy
from .specs import JudgeSpec

USE_FIELD: Any = object()  # judge_spec's default text: the ``judge`` field


@dataclass
class JudgeSettings:
    """Every judge setting of a recipe. A dataclass mixed into the recipe's config: the owner calls
    ``check_judge_settings()`` from its ``__post_init__``."""

    judge: str | None = field(
        default=None,
        metadata={
            "help": "Clustering judge spec (for the trainer: used when no judge object is passed): 'answer[:<mode>]', "
            "'distinct', 'embedding[:<path>]', 'anthropic[:<model>]', 'openai:<base_url>/<model>' (split after the "
            "last /v1-like segment), 'openai' with judge_base_url and judge_model, 'transformers:<path>' or "
            "'transformers:smollm2'; 'a,b' falls back from judge a to judge b. "
            "Paper: openai (Qwen3-4B-Instruct-2507 on vLLM).",
        },
    )
    judge_base_url: str | None = field(
        default=None,
        metadata={"help": "With judge: openai, the server's API root, e.g. 'http://127.0.0.1:8000/v1'."},
    )
    judge_model: str | None = field(
        default=None,
        metadata={"help": "The judge server's model id (default with judge: openai: the only model it serves)."},
    )
    judge_api_key_env: str = field(
        default="OPENAI_API_KEY",
        metadata={"help": "Environment variable holding the judge server's API key, if it needs one."},
    )
    judge_max_concurrency: int = field(
        default=32,
        metadata={"help": "Most judge requests in flight per process; the limit adapts to the server below this."},
    )
    judge_initial_concurrency: int = field(
        default=8,
        metadata={"help": "Judge requests in flight at first, before the limit adapts to the server."},
    )
    judge_fallback: str = field(
        default="distinct",
        metadata={
            "help": "When a judge spec (and its chain) cannot judge a group: 'distinct' (every completion its own "
            "cluster, the authors' behaviour), 'grpo' (Dr.GRPO advantage for that group), 'skip' (advantage 0) or "
            "'raise' (stop training). Paper: distinct (code).",
        },
    )
    judge_max_fallback_frac: float = field(
        default=0.5,
        metadata={
            "help": "Stop the run when more than this fraction of a step's groups fell back, judge_fallback_patience "
            "steps in a row (1 never stops)."
        },
    )
    judge_fallback_patience: int = field(
        default=3,
        metadata={"help": "Consecutive steps above judge_max_fallback_frac before the run stops."},
    )
    judge_max_outage_seconds: float = field(
        default=4 * 3600.0,
        metadata={
            "help": "When the judge service is down (no answer at all: refused, timed out, 5xx; its breaker open), "
            "training waits before the step's update, probing with backoff and logging a line a minute, and goes on "
            "when it answers, so no group falls back for an outage. Past this many seconds down, the run saves a "
            "checkpoint and exits 1. 0 does not wait: the groups fall back (judge_fallback) as for any failure."
        },
    )
    judge_template: str = field(
        default="math",
        metadata={
            "help": "Prompt of language-model judges: 'math', 'code', 'agent' (groups an agent's trajectories by "
            "plan: which tools, in which order, to what end) or the path of your own template file. "
            "Paper: math; code.",
        },
    )
    judge_cache_dir: str | None = field(
        default=None,
        metadata={"help": "Directory of the on-disk judge cache (shared by processes, reused on resume)."},
    )
    judge_max_tokens: int = field(default=1024, metadata={"help": "Most tokens in a judge's answer."})
    judge_max_response_chars: int | None = field(
        default=None,
        metadata={
            "help": "LM judges: send only the last this many characters of each response (the end holds the "
            "answer), to bound the judge's prompt for long completions. None sends them whole, as the authors do."
        },
    )
    judge_tool_result_chars: int | None = field(
        default=TOOL_RESULT_CHARS,
        metadata={
            "help": "Agents: how much of each tool result a judge reads in a trajectory (its last this many "
            "characters, with a line saying how many were cut); tool results can be long, and they are the "
            "environment's, not the agent's. None shows them whole."
        },
    )
    judge_max_responses_per_request: int | None = field(
        default=None,
        metadata={
            "help": "LM judges: judge a group larger than this in parts of at most this many responses, one request "
            "after another, each told the strategies found so far so the cluster ids stay consistent across parts. "
            "For large num_generations, where one prompt with every response would be too long. None: one request."
        },
    )
    judge_temperature: float = field(
        default=0.0,
        metadata={"help": "Sampling temperature of the judge (OpenAI-compatible and local judges; 0 is greedy)."},
    )
    judge_structured_output: str = field(
        default="json_schema",
        metadata={
            "help": "How to ask the judge server for the answer's JSON schema: 'json_schema' (response_format; vLLM, "
            "SGLang, llama.cpp, OpenAI, Claude), 'guided_json' (older vLLM), 'json_object' or 'none'. A server that "
            "rejects it is asked without it."
        },
    )
    judge_extra_body: dict[str, Any] | str | None = field(
        default=None,
        metadata={
            "help": "Extra fields of every judge request (OpenAI-compatible servers), merged last, as a mapping or "
            'JSON: e.g. {"chat_template_kwargs": {"enable_thinking": false}}.'
        },
    )
    judge_stream: bool = field(
        default=True,
        metadata={"help": "Stream judge replies, so a request given up on is aborted on the server."},
    )
    judge_timeout: float = field(
        default=120.0,
        metadata={"help": "Seconds from sending a judge request to the end of its reply (queueing included)."},
    )
    judge_connect_timeout: float = field(default=5.0, metadata={"help": "Seconds to connect to the judge server."})
    judge_retry_budget: float = field(
        default=120.0,
        metadata={
            "help": "Seconds a group keeps retrying a failing judge service (long enough for a server restart) "
            "before it falls back."
        },
    )

    def check_judge_settings(self) -> None:
        """ValueError naming the field, the value and what to set, for any judge setting out of range."""
        if self.judge_fallback not in FALLBACKS:
            raise ValueError(f"judge_fallback must be one of {FALLBACKS}, got {self.judge_fallback!r}.")
        for name in ("judge_timeout", "judge_connect_timeout"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be positive seconds, got {getattr(self, name)}.")
        if not self.judge_retry_budget >= 0:
            raise ValueError(f"judge_retry_budget must be non-negative seconds, got {self.judge_retry_budget}.")
        if self.judge_template not in BUILTIN_TEMPLATES and not Path(self.judge_template).is_file():
            raise ValueError(
                f"judge_template={self.judge_template!r} is neither one of {BUILTIN_TEMPLATES} nor an existing file."
            )
        chars = self.judge_max_response_chars
        if chars is not None and chars < 1:
            raise ValueError(f"judge_max_response_chars={chars}: use a positive count, or null for no cap.")
        tool_chars = self.judge_tool_result_chars
        if tool_chars is not None and tool_chars < 0:
            raise ValueError(f"judge_tool_result_chars={tool_chars}: use a count of 0 or more, or null for no cap.")
        per_request = self.judge_max_responses_per_request
        if per_request is not None and per_request < 2:
            raise ValueError(
                f"judge_max_responses_per_request={per_request}: use at least 2 (a part of one response cannot be "
                "compared), or null to send each group in one request."
            )
        for name in ("judge_max_concurrency", "judge_initial_concurrency", "judge_max_tokens"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}.")
        if not 0 <= self.judge_temperature <= 2:
            raise ValueError(f"judge_temperature must be within [0, 2], got {self.judge_temperature}.")
        if self.judge_structured_output not in STRUCTURED_OUTPUTS:
            raise ValueError(
                f"judge_structured_output must be one of {STRUCTURED_OUTPUTS}, got {self.judge_structured_output!r}."
            )
        if not 0 <= self.judge_max_fallback_frac <= 1:
            raise ValueError(f"judge_max_fallback_frac must be within [0, 1], got {self.judge_max_fallback_frac}.")
        if not self.judge_max_outage_seconds >= 0:
            raise ValueError(
                f"judge_max_outage_seconds must be non-negative seconds, got {self.judge_max_outage_seconds}."
            )
        if self.judge_fallback_patience < 1:
            raise ValueError(f"judge_fallback_patience must be at least 1 step, got {self.judge_fallback_patience}.")
        self.judge_extra_body = json_mapping("judge_extra_body", self.judge_extra_body, "request fields")
        if self.judge_base_url is not None:
            check_url(self.judge_base_url, "judge_base_url")
        if self.judge is not None:
            self.judge_spec()  # the spec's kinds registered, no credentials in its URL

    def judge_spec(self, tools: str | None = None, text: str | None = USE_FIELD) -> JudgeSpec:
        """Every judge setting here as one ``JudgeSpec``: the judges of ``text`` (default the ``judge`` field; None
        for none, to put a user's own judge in the spec's pipeline), ``tools`` what an agent could call (for the
        judges whose prompt shows them). ValueError for an unknown spec."""
        text = self.judge if text is USE_FIELD else text
        settings = {
            "fallback": self.judge_fallback,
            "max_outage_seconds": self.judge_max_outage_seconds,
            "max_concurrency": self.judge_max_concurrency,
            "tool_result_chars": self.judge_tool_result_chars,
            "lm": LMOptions(
                template=self.judge_template,
                max_tokens=self.judge_max_tokens,
                temperature=self.judge_temperature,
                structured_output=self.judge_structured_output,
                retry=RetryPolicy(
                    timeout=self.judge_timeout,
                    connect_timeout=self.judge_connect_timeout,
                    budget=self.judge_retry_budget,
                ),
                initial_concurrency=self.judge_initial_concurrency,
                cache_dir=self.judge_cache_dir,
                max_response_chars=self.judge_max_response_chars,
                max_responses_per_request=self.judge_max_responses_per_request,
                tools=tools,
            ),
            "server": ServerOptions(
                base_url=self.judge_base_url,
                model=self.judge_model,
                api_key_env=self.judge_api_key_env,
                extra_body=self.judge_extra_body,
                stream=self.judge_stream,
            ),
        }
        return JudgeSpec(**settings) if text is None else JudgeSpec.parse(text, **settings)

    def make_judge(self, judge: Any = None, tools: str | None = None) -> JudgePipeline:
        """The judge of these settings, built once: ``judge`` a spec string (default the ``judge`` field), a
        ``ClusteringJudge`` or a function of the user's own (put in these settings' pipeline: fallback, outage wait),
        or a ``JudgePipeline`` (used as it is); ``tools`` told to the judges whose prompt shows them. The one way
        settings reach a judge."""
        if isinstance(judge, JudgePipeline):
            return judge
        if judge is not None and not isinstance(judge, str):
            return self.judge_spec(tools, text=None).around(judge)
        if judge is None and self.judge is None:
            raise ValueError("No judge: set judge (e.g. 'answer', 'embedding', 'openai').")
        return self.judge_spec(tools, text=judge or self.judge).build()
