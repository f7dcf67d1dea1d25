"""An evaluation recipe assembled (``poly-epo eval``, ``poly-epo judge-agreement``): which checkpoints, on which
rows, scored how (``EvalArguments``; the judge settings are training's), checked before any model loads, and what
samples each checkpoint (``EvaluationParts``)."""

from __future__ import annotations

import math
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch

from ..constants import BUILTIN_PREFIX
from ..data import (
    DatasetArguments,
    conversational,
    format_dataset,
    load_training_problems,
    problem_fingerprints,
    refuse_training_rows,
)
from ..environments import AgentArguments, agent_parts, agent_tools, check_tool_template
from ..evaluation.episodes import Agent, EpisodeSampler
from ..evaluation.sampling import BACKENDS, SamplingSettings, TransformersSampler, VLLMSampler, choose_backend
from ..evaluation.scoring import VOTE_MODES, Scorer
from ..judges import JudgeSettings
from ..judges.prompts import describe_tools
from ..models import check_model_path, resolve_model
from ..recipe import RecipeError
from ..rewards import CodeRewardSettings
from ..tasks import load_rows
from ..trainer import DrGRPOTrainer, PolyEPOConfig
from .shared import check_output_dir, resolve_rewards

DTYPES = ("auto", "float32", "float16", "bfloat16")


DEPRECATED_NAMES = {"dataset_split": "dataset_test_split", "correct_threshold": "correct_reward_threshold"}


@dataclass
class EvalArguments(DatasetArguments, CodeRewardSettings, AgentArguments, JudgeSettings):
    """Which checkpoints, on which problems, how many samples (for an agent, episodes), scored how; the judge's
    settings are training's (``JudgeSettings``)."""

    model_name_or_path: list[str] = field(
        default_factory=lambda: ["builtin:demo"],
        metadata={
            "help": "Checkpoints to compare, each 'path' or 'label=path' (also 'builtin:demo', 'builtin:smollm2')."
        },
    )
    output_dir: str = field(default="outputs/eval", metadata={"help": "Report, plots, and per-checkpoint samples."})
    dataset_test_split: str = field(default="test", metadata={"help": "Split to evaluate on (training's name)."})
    max_problems: int | None = field(default=None, metadata={"help": "Evaluate only the first problems."})
    max_tool_calling_iterations: int | None = field(
        default=None,
        metadata={"help": "An agent's tool rounds per episode, as in training (None: up to max_new_tokens)."},
    )
    reward_weights: list[float] | None = field(default=None, metadata={"help": "One weight per reward (default 1)."})
    correct_reward_threshold: float = field(
        default=1.0, metadata={"help": "A sample is correct when its reward >= this (training's name)."}
    )
    judge: str | None = field(
        default="answer",
        metadata={
            "help": "Clustering judge for distinct correct strategies: any spec training's judge takes ('none' to "
            "skip); every judge_* setting of a training recipe applies here too."
        },
    )
    judge_fallback: str = field(
        default="raise",
        metadata={
            "help": "When the judge (and its chain) cannot judge a group: 'raise' (stop; the samples are kept and a "
            "rerun resumes), or 'distinct' / 'grpo' / 'skip' as in training ('grpo' and 'skip' leave the group "
            "unclustered)."
        },
    )
    judge_max_outage_seconds: float = field(
        default=0.0,
        metadata={
            "help": "Seconds to wait out a judge service that does not answer at all before failing (0: fail at once, "
            "after each group's judge_retry_budget)."
        },
    )
    judge_samples: int | None = field(
        default=None,
        metadata={"help": "Cluster only the first samples of each problem (an LM judge reads a group in one prompt)."},
    )
    vote_answer: str = field(
        default="auto",
        metadata={
            "help": f"How majority vote reads a sample's final answer: one of {VOTE_MODES} ('plan': an agent's tool "
            "calls in order, then its final text)."
        },
    )
    num_samples: int = field(default=16, metadata={"help": "Samples per problem (n); pass@k for k = 1, 2, 4, ..., n."})
    max_new_tokens: int = field(default=1024, metadata={"help": "Longest completion."})
    temperature: float = field(default=1.0, metadata={"help": "Sampling temperature (> 0)."})
    top_p: float = field(default=1.0, metadata={"help": "Nucleus sampling."})
    top_k: int = field(default=0, metadata={"help": "Top-k sampling (0: off)."})
    seed: int = field(default=0, metadata={"help": "Samples depend only on the seed and the problem index."})
    backend: str = field(default="auto", metadata={"help": f"One of {BACKENDS}: 'auto' is vLLM when installed."})
    batch_size: int = field(default=64, metadata={"help": "transformers: sequences per generate call."})
    chunk_size: int = field(default=8, metadata={"help": "Problems per write to disk (what a kill can lose)."})
    dtype: str = field(
        default="auto",
        metadata={
            "help": "Model dtype, both backends: 'auto' (the checkpoint's for transformers; vLLM runs a float32 "
            "checkpoint in bfloat16), 'bfloat16', 'float32', ..."
        },
    )
    vllm_gpu_memory_utilization: float = field(
        default=0.9, metadata={"help": "vLLM: GPU memory share (on vLLM's CPU build, the share of CPU memory)."}
    )
    vllm_enforce_eager: bool = field(
        default=False, metadata={"help": "vLLM: no CUDA graphs or torch.compile (starts faster, samples slower)."}
    )
    bootstrap: int = field(default=1000, metadata={"help": "Bootstrap resamples for the confidence bands."})
    confidence: float = field(default=0.95, metadata={"help": "Confidence level of the bands."})
    maj_subsets: int = field(default=200, metadata={"help": "Random k-subsets averaged for maj@k (1 < k < n)."})
    overwrite: bool = field(default=False, metadata={"help": "Discard samples drawn with other settings."})
    eval_on_training_rows: bool = field(
        default=False,
        metadata={
            "help": "Allow problems a checkpoint was trained on (training saves their fingerprints in its "
            "output_dir; refused by default)."
        },
    )
    dataset_split: str | None = field(
        default=None, metadata={"help": "Deprecated: use dataset_test_split (the name training uses)."}
    )
    correct_threshold: float | None = field(
        default=None, metadata={"help": "Deprecated: use correct_reward_threshold (the name training uses)."}
    )

    def __post_init__(self) -> None:
        for old, new in DEPRECATED_NAMES.items():
            if getattr(self, old) is not None:  # as TRL retires a name: it still works, and says what to write
                warnings.warn(
                    f"`{old}` is deprecated and will be removed in a future version; use `{new}` instead (the name "
                    "poly-epo train uses).",
                    FutureWarning,
                    stacklevel=2,
                )
                setattr(self, new, getattr(self, old))
                setattr(self, old, None)
        super().__post_init__()
        self.check_code_reward_settings()
        if not self.model_name_or_path:
            raise RecipeError("model_name_or_path is empty: name the checkpoints to compare, each 'label=path'.")
        self.settle_reward_funcs()
        choices = {"backend": BACKENDS, "vote_answer": VOTE_MODES, "dtype": DTYPES}
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                raise RecipeError(f"{name}={getattr(self, name)!r}: use one of {list(allowed)}.")
        at_least_one = ("num_samples", "max_new_tokens", "batch_size", "chunk_size", "bootstrap", "maj_subsets")
        for name in (*at_least_one, "max_problems", "judge_samples"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise RecipeError(f"{name}={value}: must be at least 1.")
        if self.is_agent() and self.backend == "vllm":
            raise RecipeError(
                "backend='vllm': an agent's episodes are played with transformers (TRL's tool loop over the model's "
                "generate); set backend: transformers or auto."
            )
        if self.max_tool_calling_iterations is not None and self.max_tool_calling_iterations < 0:
            raise RecipeError(
                f"max_tool_calling_iterations={self.max_tool_calling_iterations}: 0 or more tool rounds, or null."
            )
        ranges = {
            "temperature": (self.temperature > 0, "must be > 0 (sampling; 1.0 as in training)"),
            "top_p": (0 < self.top_p <= 1, "must be in (0, 1]"),
            "top_k": (self.top_k >= 0, "must be >= 0 (0: off)"),
            "confidence": (0 < self.confidence < 1, "use a level in (0, 1), e.g. 0.95"),
            "vllm_gpu_memory_utilization": (0 < self.vllm_gpu_memory_utilization <= 1, "must be in (0, 1]"),
            "correct_reward_threshold": (math.isfinite(self.correct_reward_threshold), "must be a finite number"),
        }
        for name, (ok, why) in ranges.items():
            if not ok:
                raise RecipeError(f"{name}={getattr(self, name)}: {why}.")
        if self.judge in ("", "none"):
            self.judge = None
        try:
            self.check_judge_settings()
        except ValueError as error:
            raise RecipeError(str(error)) from None
        self.sampling = SamplingSettings(
            self.num_samples, self.max_new_tokens, self.temperature, self.top_p, self.top_k, self.seed
        )
        pairs = self.checkpoints()
        for (label, path), spec in zip(pairs, self.model_name_or_path, strict=True):
            if not label or not path:
                raise RecipeError(f"model_name_or_path entry {spec!r}: write 'path' or 'label=path'.")
        labels = [label for label, _ in pairs]
        if len(set(labels)) != len(labels):
            raise RecipeError(f"Checkpoint labels {labels} repeat: name them 'label=path'.")

    def checkpoints(self) -> list[tuple[str, str]]:
        """(label, path) pairs: 'label=path', else the path's last part."""
        out = []
        for spec in self.model_name_or_path:
            label, sep, path = spec.partition("=")
            if not sep:
                label, path = Path(spec.rstrip("/")).name.replace(BUILTIN_PREFIX, ""), spec
            out.append((label, path))
        return out

    def is_agent(self) -> bool:
        return self.environment_factory is not None or bool(self.tools)

    def store_settings(self, path: str) -> dict[str, Any]:
        """What determines the samples: a store refuses to resume under different values."""
        keys = (
            "dataset_name",
            "dataset_config",
            "dataset_test_split",
            "prompt_column",
            "instruction",
            "system_prompt",
        )
        settings = {"model": path, **asdict(self.sampling), **{k: getattr(self, k) for k in (*keys, "chat_format")}}
        if self.is_agent():
            agent_keys = ("environment_factory", "tools", "keep_columns", "max_tool_calling_iterations")
            settings.update({k: getattr(self, k) for k in agent_keys})
        return settings


@dataclass
class EvaluationParts:
    """What an evaluation runs on: the (label, path) checkpoints, the formatted rows, the scorer (rewards, weights,
    judge, majority vote), and an agent's ``environment_factory`` and ``tools`` (empty for a plain policy)."""

    args: EvalArguments
    checkpoints: list[tuple[str, str]]
    rows: list[dict[str, Any]]
    rewards: list[Any]
    scorer: Scorer
    agent: dict[str, Any]

    def make_sampler(self, label: str, path: str) -> Any:
        """The checkpoint's sampler: episodes for an agent, samples for a plain policy."""
        if self.agent:
            return make_episode_sampler(self.args, label, path, self.agent, self.rewards, self.rows)
        return make_sampler(self.args, label, path)


def assemble_evaluation(args: EvalArguments) -> EvaluationParts:
    """Everything an evaluation needs but the models, checked: the output folder, the checkpoints' paths, the
    rewards, the judge, the backend, the rows (refused where a checkpoint was trained on them). The output folder is
    made last, so a refused recipe leaves nothing behind."""
    check_output_dir(args.output_dir, create=False)
    checkpoints = [(label, resolve_model(spec)) for label, spec in args.checkpoints()]
    for label, path in checkpoints:
        check_model_path(path, f"model_name_or_path ({label})")
    rewards = resolve_rewards(args, args.reward_weights)
    try:
        choose_backend(args.backend)
    except (ValueError, ImportError) as error:
        raise RecipeError(str(error)) from None
    table = load_rows(args, args.dataset_test_split)
    check_held_out(args, table, checkpoints)
    agent, keep = agent_parts(args, conversational(table, args), table, rewards)
    tools = describe_tools(agent_tools(agent)) if agent else None  # the judge's task names them, as in training
    try:
        judge = args.make_judge(tools=tools) if args.judge else None
    except (ValueError, ImportError) as error:
        raise RecipeError(str(error)) from None
    rows = list(format_dataset(table, args, args.max_problems, keep=keep))
    if not rows:
        raise RecipeError("The dataset is empty after formatting.")
    scorer = Scorer(rewards, args.reward_weights, judge, args.vote_answer, args.judge_samples)
    check_output_dir(args.output_dir)
    return EvaluationParts(args, checkpoints, rows, rewards, scorer, agent)


def check_held_out(args: EvalArguments, table: Any, checkpoints: list[tuple[str, str]]) -> None:
    """Refuse problems a checkpoint was trained on (from the fingerprints its training run saved)."""
    if args.eval_on_training_rows:
        return
    held_out = problem_fingerprints(table, args, args.max_problems)
    for label, path in checkpoints:
        record = load_training_problems(path)
        if record is not None:
            refuse_training_rows(
                held_out,
                set(record["fingerprints"]),
                f"dataset_name={args.dataset_name!r} (split {args.dataset_test_split!r}) and checkpoint {label} "
                f"(trained on {record['dataset_name']!r}, split {record['split']!r})",
            )


def not_loaded(label: str, path: str, error: Exception) -> RecipeError:
    """A checkpoint that could not be loaded, with the first line of the reason."""
    reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    return RecipeError(f"model_name_or_path {label}={path!r} could not be loaded: {reason}")


def make_sampler(args: EvalArguments, label: str, path: str):
    """The model at ``path`` behind vLLM or transformers; a model that cannot be loaded is a RecipeError."""
    backend = choose_backend(args.backend)
    try:
        if backend == "vllm":
            return VLLMSampler(
                path,
                args.sampling,
                gpu_memory_utilization=args.vllm_gpu_memory_utilization,
                dtype=args.dtype,
                enforce_eager=args.vllm_enforce_eager,
            )
        return TransformersSampler.from_pretrained(path, args.sampling, batch_size=args.batch_size, dtype=args.dtype)
    except (OSError, ValueError) as error:
        raise not_loaded(label, path, error) from None


def make_episode_sampler(
    args: EvalArguments, label: str, path: str, agent: dict[str, Any], rewards: list[Any], rows: list[dict[str, Any]]
) -> EpisodeSampler:
    """The checkpoint at ``path`` inside the trainer TRL would train this agent with (its tokenizer with TRL's
    response parser, chat template and tool-result tokens), playing episodes with transformers' ``generate``.

    Why a trainer, which trains nothing here (``DrGRPOTrainer``: no judge): TRL 1.16 makes the tool loop's pieces
    inside ``GRPOTrainer.__init__`` only, the prefix-preserving chat template it picks per model family, the response
    parser it attaches to the tokenizer, and the tokens that close a tool result (``_get_tool_suffix_ids``). Making
    them here would repeat TRL's choices on its private names, so the episodes evaluated could drift from the
    episodes trained on; building the trainer gives exactly TRL's."""
    from datasets import Dataset

    config = PolyEPOConfig(
        output_dir=str(Path(args.output_dir) / label),
        max_completion_length=args.max_new_tokens,
        max_tool_calling_iterations=args.max_tool_calling_iterations,
        temperature=args.temperature,
        model_init_kwargs={"dtype": args.dtype},
        use_cpu=not torch.cuda.is_available(),
        bf16=False,
        report_to="none",
        seed=args.seed,
    )
    try:
        trainer = DrGRPOTrainer(
            model=path, args=config, reward_funcs=rewards, train_dataset=Dataset.from_list(rows), **agent
        )
    except (OSError, ValueError) as error:
        raise not_loaded(label, path, error) from None
    try:
        check_tool_template(trainer.processing_class)
    except RecipeError as error:
        raise RecipeError(f"model_name_or_path {label}={path!r}: {error}") from None
    steps = Agent(agent.get("environment_factory"), agent.get("tools", []), args.max_tool_calling_iterations)
    return EpisodeSampler.for_trainer(trainer, args.sampling, steps, batch_size=args.batch_size)
