"""A training recipe assembled: the script's settings (``ScriptArguments``, beside ``PolyEPOConfig`` and TRL's
``ModelConfig``), everything checked before the model loads, and what the trainer is built from
(``TrainingParts``): rewards, rows, judge, held-out rows, an agent's environments and tools."""

from __future__ import annotations

import importlib.util
import json
import logging
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from trl import ModelConfig

from ..constants import BUILTIN_PREFIX
from ..data import (
    DatasetArguments,
    conversational,
    drop_long_prompts,
    far_past_context,
    format_dataset,
    mixture_columns,
    problem_fingerprints,
    prompt_format,
    refuse_training_rows,
)
from ..environments import AgentArguments, agent_parts, agent_tools, check_environment_column, check_tool_template
from ..evaluation.scoring import VOTE_MODES
from ..judges import JudgePipeline
from ..judges.prompts import describe_tools
from ..methods import get_method, resolve_settings
from ..models import check_model_path, check_model_settings, resolve_model
from ..recipe import RecipeError, refuse
from ..rewards import OPEN_R1_CODE, CodeRewardSettings
from ..rewards.checks import empty_cell_refusal, empty_cells, missing_columns, text_prompt_refusals
from ..tasks import load_rows
from ..trainer import PolyEPOConfig
from ..trainer.engines import precision_mismatch
from ..trainer.judge_audit import nothing_to_audit
from .resume import check_resume_from
from .shared import check_output_dir, load_tokenizer, resolve_rewards

logger = logging.getLogger(__name__)


@dataclass
class ScriptArguments(DatasetArguments, CodeRewardSettings, AgentArguments):
    """What to train on, with which rewards, and with which trainer (the rest is PolyEPOConfig and ModelConfig)."""

    dataset_train_split: str = field(default="train", metadata={"help": "Split to train on."})
    reward_model_name_or_path: str | None = field(
        default=None,
        metadata={
            "help": "A reward model (a sequence classifier: Hub id or local folder), scored before reward_funcs, as "
            "`trl grpo` takes it."
        },
    )
    ignore_bias_buffers: bool = field(
        default=False, metadata={"help": "TRL's script argument; TRL's GRPO script does not use it, nor does this."}
    )
    max_train_samples: int | None = field(default=None, metadata={"help": "Keep only the first rows (smoke tests)."})
    trainer: str = field(
        default="poly_epo",
        metadata={
            "help": "The advantage method: 'poly_epo', 'grpo' (Dr.GRPO baseline), 'grpo_div' (GRPO+DIV), another "
            "registered method, or 'package.module:name' for your own."
        },
    )
    dry_run: bool = field(
        default=False,
        metadata={"help": "Check the recipe (config, dataset, rewards, judge) and stop before loading the model."},
    )
    check_judge: bool = field(default=True, metadata={"help": "Send one probe group to the judge before training."})
    eval_dataset_name: str | None = field(
        default=None,
        metadata={
            "help": "Held-out problems (same formats and columns as dataset_name): every eval_steps, log eval_pass@k, "
            "eval_maj@n and eval_distinct_correct_clusters (with the recipe's judge) of eval_num_samples samples "
            "(for an agent, episodes played as training plays them)."
        },
    )
    dataset_test_split: str = field(default="test", metadata={"help": "Split of eval_dataset_name (TRL's name)."})
    eval_on_training_rows: bool = field(
        default=False,
        metadata={"help": "Allow held-out problems that are also training problems (refused by default)."},
    )
    eval_max_problems: int | None = field(
        default=None,
        metadata={
            "help": "Evaluate on the first problems only (None: every held-out problem; an LM judge or a large model "
            "may want fewer)."
        },
    )
    eval_num_samples: int = field(default=16, metadata={"help": "Samples per held-out problem (n of pass@k)."})
    eval_vote_answer: str = field(
        default="auto",
        metadata={
            "help": f"What eval_maj@n counts: one of {VOTE_MODES}, as poly-epo eval's vote_answer ('plan': an "
            "agent's tool calls in order, then its final text)."
        },
    )
    chat_template: str | None = field(
        default=None,
        metadata={
            "help": "The chat template of the model's tokenizer for this run: a Jinja template, or a file holding one "
            "(open-r1's and TRL's SFT key). The prompts are rendered with it and the saved tokenizer keeps it."
        },
    )
    max_prompt_tokens: int | None = field(
        default=None,
        metadata={
            "help": "Drop training prompts longer than this many tokens (after the chat template), as verl's "
            "filter_overlong_prompts does; the count dropped is logged. None keeps every prompt."
        },
    )
    eval_at_start: bool = field(
        default=False, metadata={"help": "Also evaluate the held-out problems before the first step (step 0)."}
    )
    overwrite_output_dir: bool = field(
        default=False,
        metadata={
            "help": "Start afresh in output_dir: its checkpoints are removed first instead of resumed from (a run "
            "never resumes from another method's checkpoints; it stops and names both)."
        },
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if not isinstance(self.trainer, str) or not self.trainer.strip():
            raise RecipeError(
                f"trainer={self.trainer!r}: name the advantage method, e.g. trainer: poly_epo (or grpo, grpo_div, "
                "another registered method, package.module:name), or leave the key out for poly_epo."
            )
        self.check_code_reward_settings()
        self.settle_reward_funcs(self.reward_model_name_or_path)
        empty = {
            "eval_dataset_name": "name the held-out problems' file or dataset",
            "chat_template": "give a Jinja template or a file holding one",
        }
        for name, what in empty.items():
            value = getattr(self, name)
            if isinstance(value, str) and not value.strip():
                raise RecipeError(f"{name}={value!r} is empty: {what}, or leave the key out (null) for none.")
        if self.eval_vote_answer not in VOTE_MODES:
            raise RecipeError(f"eval_vote_answer={self.eval_vote_answer!r}: use one of {list(VOTE_MODES)}.")
        if self.max_train_samples is not None and self.max_train_samples < 1:
            raise RecipeError(
                f"max_train_samples={self.max_train_samples} keeps no training rows: a positive count, or null for "
                "every row."
            )
        if self.max_prompt_tokens is not None and self.max_prompt_tokens < 1:
            raise RecipeError(
                f"max_prompt_tokens={self.max_prompt_tokens}: a positive token count, or null for no limit."
            )


@dataclass
class TrainingParts:
    """What a trainer is built from, besides the model and the configs: the reward functions, the formatted training
    rows, the judge (None for Dr.GRPO without held-out rows), the held-out rows (None without
    ``eval_dataset_name``), the fingerprints of the training problems, an agent's ``environment_factory`` and
    ``tools`` as the trainer takes them (empty for a plain policy), and the rows of TRL's own evaluation (with
    ``eval_strategy``, as ``trl grpo`` passes ``eval_dataset``)."""

    reward_funcs: list[Any]
    train_dataset: Any
    judge: JudgePipeline | None
    eval_rows: list[dict[str, Any]] | None
    training_problems: set[str]
    agent: dict[str, Any]
    method_settings: Any  # what the recipe's method trains with (methods.resolve_settings), as the trainer resolves it
    eval_dataset: Any = None  # TRL's own evaluation (eval_strategy), on dataset_test_split of the training source
    method_sources: dict[str, str] = field(default_factory=dict)  # where each of the method's settings came from
    audit_judge: JudgePipeline | None = None  # the audit judge, built (and probed) at the door; None without one


def check_judge(judge: JudgePipeline, who: str = "The judge") -> None:
    """One probe group (``JudgePipeline.check_answers``): a judge that cannot answer stops the run before the model
    loads."""
    try:
        judge.check_answers(who)
    except ValueError as error:
        raise RecipeError(
            f"{error} Or choose another judge, or set check_judge: false to rely on judge_fallback."
        ) from None


def check_held_out_agent_rows(table: Any, keep: list[str], agent: dict[str, Any], name: str) -> None:
    """RecipeError when the held-out rows lack a column the training rows give the environments (``keep``), or,
    with several environments, do not each name one of them."""
    missing = [column for column in keep if column not in table.column_names]
    if missing:
        raise RecipeError(
            f"eval_dataset_name={name!r}: its rows lack {missing}, which the environment's reset or keep_columns "
            f"reads; its columns are {table.column_names}."
        )
    factories = agent.get("environment_factory")
    if isinstance(factories, dict):
        try:
            check_environment_column(list(factories), table)
        except ValueError as error:
            raise RecipeError(f"eval_dataset_name={name!r}: {error}") from None


def is_local_model(name: str | None) -> bool:
    """Whether the policy's tokenizer can be read at the door without the network: a built-in model or a folder."""
    return bool(name) and (name.startswith(BUILTIN_PREFIX) or Path(name).expanduser().is_dir())


def check_chat_template(tokenizer: Any, model: str | None) -> None:
    """RecipeError when the prompts are conversations and the tokenizer has no chat template: TRL would stop at the
    first step, inside ``apply_chat_template``."""
    if not getattr(tokenizer, "chat_template", None):
        refuse(
            f"The prompts are conversations, and model_name_or_path={model!r} has a tokenizer without a chat "
            "template: set chat_template (a Jinja template, or a file holding one), or make the prompts text "
            "(chat_format: false, with no system_prompt)."
        )


def check_user_turns(prompts: list[list[dict[str, Any]]]) -> None:
    """RecipeError for a conversational prompt with no user message (a system message alone): the model would be
    asked nothing, and TRL would train on it without a word."""
    for index, messages in enumerate(prompts):
        if not any(isinstance(m, dict) and m.get("role") == "user" for m in messages):
            roles = [m.get("role") for m in messages if isinstance(m, dict)]
            refuse(
                f"Training row {index}'s prompt holds no user message (roles {roles}): each conversation needs the "
                "user's turn. Fix the row, or drop rows like it from the table."
            )
            return


LORA_KEYS = ("lora_target_modules", "lora_r", "lora_alpha", "lora_dropout", "lora_modules_to_save")


def check_lora(model_args: ModelConfig) -> None:
    """RecipeError for LoRA settings that would not apply: given without use_peft (the whole model would train), or
    target modules that name no module of the model (read from its config on the meta device, no weights), which
    PEFT would skip or refuse only after the model loads."""
    defaults = ModelConfig()
    given = [key for key in LORA_KEYS if getattr(model_args, key, None) != getattr(defaults, key, None)]
    if given and not model_args.use_peft:
        refuse(
            f"{', '.join(given)} set, and use_peft is false: the LoRA settings would not apply and the whole model "
            "would train. Set use_peft: true, or drop them."
        )
        return
    targets = model_args.lora_target_modules
    if not model_args.use_peft or not targets or targets == "all-linear" or targets == ["all-linear"]:
        return
    names = model_module_names(model_args.model_name_or_path)
    if names is None:  # a Hub model not on this machine: PEFT checks it when it loads
        return
    wanted = [targets] if isinstance(targets, str) else list(targets)
    missing = [t for t in wanted if not any(n == t or n.endswith("." + t) for n in names)]
    if missing:
        leaves = sorted({n.rsplit(".", 1)[-1] for n in names if n and not n.rsplit(".", 1)[-1].isdigit()})
        refuse(
            f"lora_target_modules={targets!r}: {missing} name no module of {model_args.model_name_or_path!r}. Its "
            f"modules end in {leaves}; name some of them, or all-linear."
        )


def model_module_names(model: str | None) -> list[str] | None:
    """The module names of ``model`` built from its config on the meta device (no weights read); None where its
    config cannot be read here."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    try:
        config = AutoConfig.from_pretrained(resolve_model(model) if model else model)
        with torch.device("meta"):
            built = AutoModelForCausalLM.from_config(config)
    except (OSError, ValueError, KeyError, ImportError):  # not here, or code of its own: PEFT checks it at load
        return None
    return [name for name, _ in built.named_modules()]


def check_quantization(model_args: ModelConfig) -> None:
    """RecipeError for a quantized load without bitsandbytes (ModelConfig refuses 4- and 8-bit together)."""
    wanted = "load_in_4bit" if model_args.load_in_4bit else "load_in_8bit" if model_args.load_in_8bit else None
    if wanted and importlib.util.find_spec("bitsandbytes") is None:
        raise RecipeError(f"{wanted}=true needs bitsandbytes: pip install bitsandbytes (on a CUDA machine).")


def assemble_training(
    script_args: ScriptArguments, training_args: PolyEPOConfig, model_args: ModelConfig
) -> TrainingParts:
    """Everything the trainer needs except the model weights, checked."""
    method = get_method(script_args.trainer)
    try:  # the method's settings from what the recipe set, checked before anything loads
        settings = resolve_settings(method, training_args.given_settings, training_args.num_generations, training_args)
    except (TypeError, ValueError) as error:
        raise RecipeError(str(error)) from None  # the resolver's errors name the method
    check_model_path(model_args.model_name_or_path, hub_cache=not script_args.dry_run)
    check_resume_from(training_args.resume_from_checkpoint)
    check_output_dir(training_args.output_dir, create=not script_args.dry_run)
    check_quantization(model_args)
    check_model_settings(
        model_args.model_name_or_path,
        model_args.model_revision,
        training_args.model_init_kwargs or {},
        training_args.router_aux_loss_coef,
    )
    check_hub(training_args)
    mismatch = precision_mismatch(training_args)
    if mismatch:
        raise RecipeError(mismatch)
    rewards = resolve_rewards(script_args, training_args.reward_weights)
    if script_args.reward_model_name_or_path:
        check_model_path(script_args.reward_model_name_or_path, "reward_model_name_or_path", not script_args.dry_run)
        if script_args.eval_dataset_name:
            raise RecipeError(
                "reward_model_name_or_path with eval_dataset_name: the held-out evaluation scores with reward "
                "functions only. Drop eval_dataset_name, or name reward functions instead of a reward model."
            )
    table = load_rows(script_args, script_args.dataset_train_split)
    agent, keep = agent_parts(script_args, conversational(table, script_args), table, rewards)
    name, revision, template = model_args.model_name_or_path, model_args.model_revision, script_args.chat_template
    loaded: dict[str, Any] = {}

    def tokenizer(needed_by: str) -> Any:
        """The policy's tokenizer (with the recipe's chat template), loaded once for every check that reads it."""
        if "tokenizer" not in loaded:
            loaded["tokenizer"] = load_tokenizer(name, revision, needed_by, template)
        return loaded["tokenizer"]

    if agent:
        check_tool_template(tokenizer("environment_factory and tools"))
    trained = problem_fingerprints(table, script_args, script_args.max_train_samples)
    dataset = format_dataset(table, script_args, script_args.max_train_samples, keep=keep)
    said = prompt_format(script_args, table.column_names)
    if script_args.instruction is None and said.instruction:
        logger.warning(
            "The prompts are column %r with the math instruction appended (%r); instruction: '' keeps them as the "
            "table has them, instruction: <text> appends another.",
            said.column,
            said.instruction,
        )
    if script_args.max_prompt_tokens is not None and len(dataset):
        dataset, dropped = drop_long_prompts(dataset, tokenizer("max_prompt_tokens"), script_args.max_prompt_tokens)
        logger.info("max_prompt_tokens=%d: dropped %d overlong prompts", script_args.max_prompt_tokens, dropped)
        if len(dataset) == 0:
            raise RecipeError(f"Every prompt is longer than max_prompt_tokens={script_args.max_prompt_tokens}.")
    if len(dataset) == 0:
        raise RecipeError(
            f"dataset_name={script_args.dataset_name!r} has no rows in split {script_args.dataset_train_split!r} "
            "(dataset_train_split)."
        )
    check_reward_columns(rewards, dataset, script_args, table.column_names)
    for refusal in text_prompt_refusals(rewards, dataset[0]["prompt"]):
        refuse(refusal)
    for empty in empty_cells(rewards, dataset):
        refuse(empty_cell_refusal(*empty))
    if not name.startswith(BUILTIN_PREFIX):
        far = far_past_context(dataset["prompt"], name, revision, lambda: tokenizer("the prompts' sizes"))
        if far:
            refuse(far)
    if isinstance(dataset[0]["prompt"], list):
        check_user_turns(dataset["prompt"])
        if is_local_model(name):
            check_chat_template(tokenizer("conversational prompts"), name)
    check_lora(model_args)
    judge = audit_judge = None
    if method.needs_judge and training_args.judge is None:
        raise RecipeError(f"trainer={script_args.trainer!r} needs a judge: set judge (e.g. 'answer', 'embedding').")
    if training_args.judge is not None and (method.needs_judge or script_args.eval_dataset_name):
        tools = describe_tools(agent_tools(agent)) if agent else None  # what the agent could call, as TRL offers it
        try:
            judge = training_args.make_judge(tools=tools)
        except (ValueError, ImportError) as error:
            raise RecipeError(f"judge={training_args.judge!r}: {error}") from None
        if script_args.check_judge:
            check_judge(judge)
    if training_args.audit_judge is not None:
        if not method.needs_judge:
            raise RecipeError(nothing_to_audit(training_args.audit_judge, script_args.trainer))
        try:
            audit_judge = training_args.make_judge(training_args.audit_judge)
        except (ValueError, ImportError) as error:
            raise RecipeError(f"audit_judge={training_args.audit_judge!r}: {error}") from None
        if script_args.check_judge:
            check_judge(audit_judge, f"The audit judge (audit_judge={training_args.audit_judge!r})")
    eval_rows = None
    if script_args.eval_dataset_name:
        eval_steps = training_args.eval_steps
        if eval_steps is None or eval_steps < 1 or eval_steps != int(eval_steps):
            raise RecipeError(
                f"eval_dataset_name is set: set eval_steps to a whole number of steps (got {eval_steps})."
            )
        held_out = replace(script_args, dataset_name=script_args.eval_dataset_name)
        eval_table = load_rows(held_out, script_args.dataset_test_split)
        if agent:
            check_held_out_agent_rows(eval_table, keep, agent, script_args.eval_dataset_name)
        eval_rows = list(format_dataset(eval_table, held_out, script_args.eval_max_problems, keep=keep))
        if not eval_rows:
            raise RecipeError(f"eval_dataset_name={script_args.eval_dataset_name!r} has no problems.")
        if not script_args.eval_on_training_rows:
            refuse_training_rows(
                problem_fingerprints(eval_table, held_out, script_args.eval_max_problems),
                trained,
                f"eval_dataset_name={script_args.eval_dataset_name!r} (split {script_args.dataset_test_split!r})",
            )
    eval_dataset = None
    if training_args.eval_strategy != "no":  # as trl grpo: the training source's test split
        eval_table = load_rows(script_args, script_args.dataset_test_split)
        eval_dataset = format_dataset(eval_table, script_args, script_args.eval_max_problems, keep=keep)
    return TrainingParts(
        rewards, dataset, judge, eval_rows, trained, agent, settings.settings, eval_dataset, dict(settings.sources),
        audit_judge,
    )  # fmt: skip


def check_reward_columns(
    rewards: list[Any], dataset: Any, script_args: ScriptArguments, table_columns: list[str] | None = None
) -> None:
    """RecipeError for each reward that reads a column the training rows lack, or that one dataset of a mixture lacks
    (its rows would reach the reward as None and earn nothing, silently). A column the table has (``table_columns``)
    but the prompts left out is named with the key that keeps it; a table of open-r1's code problems
    (``verification_info``) under the name ``code`` is told that the name is this package's code reward."""
    for reward, column in missing_columns(rewards, dataset.column_names):
        if column in (table_columns or []):
            refuse(
                f"reward {reward!r} reads the column {column!r}, which the table has but the training rows leave out "
                f"(they keep {dataset.column_names}): add it to keep_columns (keep_columns: [{column}]), or use "
                "TRL's 'prompt' column (prompt_column: prompt), whose rows keep every column."
            )
        else:
            refuse(
                f"reward {reward!r} reads the column {column!r}, which the training rows lack (their columns: "
                f"{dataset.column_names}): point the data at a table that has it, or drop the reward."
            )
    if "code" in script_args.reward_funcs and "verification_info" in (table_columns or []):
        refuse(
            "reward_funcs names 'code', which is this package's code reward (unit tests from tests_column), and the "
            "table holds open-r1's verification_info: for open-r1's code reward write its path, "
            f"{OPEN_R1_CODE}, with open-r1 installed."
        )
    if not script_args.datasets:
        return
    for i, columns in enumerate(mixture_columns(json.dumps(script_args.datasets, sort_keys=True))):
        missing = missing_columns(rewards, columns)
        if missing:
            reward, column = missing[0]
            entry = script_args.datasets[i]
            raise RecipeError(
                f"datasets[{i}] (path {entry['path']!r}) has no column {column!r}, which reward {reward!r} reads (its "
                f"columns: {columns}): its rows would reach the reward as None and earn nothing. Give every dataset "
                "of the mixture the columns the rewards read (rename them in the data), or drop that dataset."
            )


def check_hub(training_args: PolyEPOConfig) -> None:
    """RecipeError for ``push_to_hub`` that cannot push: offline, or no token (the run would stop at its start)."""
    if not training_args.push_to_hub:
        return
    if os.environ.get("HF_HUB_OFFLINE", "0").lower() in ("1", "true", "yes", "on"):
        raise RecipeError("push_to_hub: true, but HF_HUB_OFFLINE is set: unset it to push, or set push_to_hub: false.")
    from huggingface_hub import get_token

    if not (training_args.hub_token or get_token()):
        raise RecipeError(
            "push_to_hub: true, but no Hub token: run `hf auth login`, set HF_TOKEN, or set hub_token; or set "
            "push_to_hub: false."
        )


def hub_dataset_name(script_args: ScriptArguments) -> str | None:
    """The dataset a pushed model's card names: ``dataset_name`` when it is a Hub id (not a local path, a built-in
    task or a mixture), as ``trl grpo`` passes it to ``push_to_hub``."""
    name = script_args.dataset_name
    if script_args.datasets or not name or name.startswith(BUILTIN_PREFIX) or Path(name).expanduser().exists():
        return None
    return name


def model_init_kwargs(model_args: ModelConfig, training_args: PolyEPOConfig) -> dict[str, Any]:
    """``from_pretrained`` arguments from the recipe's model settings, as TRL's own scripts build them (revision,
    trust_remote_code, attn_implementation, dtype); the recipe's ``model_init_kwargs`` has the last word.
    Quantization goes to the trainer as ``quantization_config`` (TRL places a quantized model itself)."""
    kwargs: dict[str, Any] = {
        "revision": model_args.model_revision,
        "trust_remote_code": training_args.trust_remote_code,
        "attn_implementation": model_args.attn_implementation,
        "dtype": model_args.dtype,
    }
    return {**kwargs, **(training_args.model_init_kwargs or {})}


def cpu_slowdowns(training_args: PolyEPOConfig, cuda_available: bool) -> list[str]:
    """Settings that cost several times the step time when training on CPU, each with the override that fixes it."""
    if cuda_available and not training_args.use_cpu:
        return []
    found = []
    if training_args.bf16:
        found.append("bf16=true (TRL's default) autocasts to bfloat16, 3-6x slower on CPU: add `--bf16 false`.")
    if training_args.activation_checkpointing:
        found.append(
            "activation_checkpointing=true (TRL's default) recomputes activations, not needed for small models on "
            "CPU: add `--activation_checkpointing false`."
        )
    return found
