"""Recipes at the door: parse a YAML recipe plus command-line overrides into the config classes, with one-line
errors (``RecipeError``) for bad YAML, unknown keys and bad values. A YAML recipe hands its values over as they are
(``set_size: 2.5`` stays a float, ``reward_funcs: math`` a string), so each field's value is held to its type."""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import difflib
import json
import os
import sys
import tempfile
import types
import typing
from collections.abc import Iterator
from typing import Any, Literal, Union


class RecipeError(ValueError):
    """A recipe that cannot run; the message says what to change."""


_FOUND: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar("recipe_refusals", default=None)


@contextlib.contextmanager
def one_pass() -> Iterator[list[str]]:
    """A recipe checked in one pass: inside, a refusal made with ``refuse`` is recorded and the door looks on past
    it (unknown keys dropped, an unknown reward stood in for, a missing answer column read as none), so a recipe
    ported from elsewhere meets every refusal at once; the first ``RecipeError`` raised ends the look. On leaving,
    one ``RecipeError`` holds them all, numbered, in the order met. Outside it, ``refuse`` raises at once."""
    found: list[str] = []
    token = _FOUND.set(found)
    try:
        yield found
    except RecipeError as error:
        found.append(str(error))
    finally:
        _FOUND.reset(token)
    if len(found) == 1:
        raise RecipeError(found[0])
    if found:
        listed = "\n".join(f"  {i}. {message}" for i, message in enumerate(found, 1))
        raise RecipeError(f"the recipe needs {len(found)} changes (all found in one pass):\n{listed}")


def refuse(message: str) -> None:
    """RecipeError(``message``), or, inside ``one_pass``, the refusal recorded (once) for the caller to look past."""
    found = _FOUND.get()
    if found is None:
        raise RecipeError(message)
    if message not in found:
        found.append(message)


def looking_past() -> bool:
    """Whether a refusal is recorded and looked past (inside ``one_pass``) rather than raised."""
    return _FOUND.get() is not None


OPEN_R1_PROMPT = (
    "for open-r1's prompt (its system_prompt as a system message, the column as the user message, nothing appended) "
    "write prompt_column: <the column>, instruction: '' and system_prompt: <its system_prompt>"
)
OPEN_R1_REWARD_KNOB = (
    "a setting of open-r1's rewards: name the reward, or the factory that makes it, by path in reward_funcs "
    "(open_r1.rewards:get_cosine_scaled_reward) and give its arguments under reward_kwargs, keyed by that name "
    "(reward_kwargs: {open_r1.rewards:get_cosine_scaled_reward: {max_len: 1000}})"
)
OPEN_R1_REWARD_KNOBS = (
    "cosine_min_value_wrong", "cosine_max_value_wrong", "cosine_min_value_correct", "cosine_max_value_correct",
    "cosine_max_len", "repetition_n_grams", "repetition_max_penalty", "code_language", "code_eval_test_batch_size",
    "parallel_code_exec_per_proc", "e2b_router_url", "morph_router_url", "code_provider", "ioi_provider",
)  # fmt: skip
# Keys of other recipes that are not ours (TRL's and transformers' older names, open-r1's own fields), each with what
# to write instead: said before any near-miss spelling, which could point at a setting of another meaning (torch_dtype
# is not torch_compile, max_prompt_length is not max_completion_length, hub_model_revision is not model_revision,
# warmup_ratio is not warmup_steps' count)
FOREIGN_KEYS = {
    "torch_dtype": "TRL's older name: write dtype",
    "warmup_ratio": "transformers' older name: write warmup_steps, where a number below 1 is the ratio (0.1)",
    "max_prompt_length": "gone from TRL's GRPOConfig, which keeps whole prompts: max_prompt_tokens drops longer ones",
    "hub_model_revision": "open-r1's branch to push to: write hub_revision (model_revision is the one to load)",
    "push_to_hub_revision": "open-r1's: push_to_hub: true with hub_revision pushes to that branch",
    "overwrite_hub_revision": "open-r1's: drop it (hub_revision names the branch, which each push updates)",
    "wandb_entity": "open-r1's: set the environment variable WANDB_ENTITY, with report_to: wandb",
    "wandb_project": "open-r1's: set the environment variable WANDB_PROJECT, with report_to: wandb",
    "wandb_run_group": "open-r1's: set the environment variable WANDB_RUN_GROUP, with report_to: wandb",
    "wandb_log_unique_prompts": "open-r1's: drop it (log_completions logs the prompts and completions)",
    "dataset_prompt_column": f"open-r1's prompt column: {OPEN_R1_PROMPT}",
    "benchmarks": "open-r1's benchmarks after training: run poly-epo eval on the trained model",
    "callbacks": "open-r1's Hub-push callbacks: drop it (push_to_hub pushes each save)",
    "max_completion_len": "a reward's length setting (get_soft_overlong_punishment's): give it under reward_kwargs "
    "for that reward; max_completion_length is the generation's length in tokens",
    **dict.fromkeys(OPEN_R1_REWARD_KNOBS, OPEN_R1_REWARD_KNOB),
}


def parse_recipe(
    classes: tuple[type, ...],
    argv: list[str] | None,
    defaults: dict[str, Any] | None = None,
    elsewhere: dict[str, str] | None = None,
) -> tuple[Any, ...]:
    """``TrlParser(classes).parse_args_and_config(argv)``, every value held to its field's type, and every user
    error (YAML syntax, unreadable file, unknown key, bad value) a ``RecipeError`` of one line. ``defaults``
    replace the fields' own defaults (the recipe and the command line still override them); ``elsewhere``: keys
    another recipe would take, each with where it belongs (said instead of a did-you-mean)."""
    import yaml
    from trl import TrlParser

    parser = TrlParser(classes)
    parser.error = _argument_error
    if defaults:
        parser.set_defaults_with_config(**defaults)
    try:
        check_duplicate_keys(argv)
        try:
            parsed = parser.parse_args_and_config(argv)
        except ValueError as error:
            keys = _unknown_keys(str(error))
            if not keys or not looking_past():
                raise
            refuse(_explain_unknown(str(error), classes, elsewhere or {}))
            with _without_keys(argv, keys) as rest:  # the rest of the recipe, checked on as if those keys were gone
                parsed = parser.parse_args_and_config(rest)
        for obj in parsed:  # ours check their fields in __post_init__, before any conversion; others (TRL's) here
            if not type(obj).__module__.startswith(__package__):
                check_field_types(obj, one_word_lists=True)
    except yaml.YAMLError as error:
        where = getattr(error, "problem_mark", None)
        name = getattr(where, "name", None)
        source = f" {name}" if name and not name.startswith("<") else ""
        at = f" (line {where.line + 1}, column {where.column + 1})" if where is not None else ""
        problem = getattr(error, "problem", None) or error
        raise RecipeError(f"The recipe{source} is not valid YAML{at}: {problem}.") from None
    except OSError as error:
        raise RecipeError(f"Cannot read the recipe: {error}.") from None
    except (ValueError, TypeError) as error:
        raise RecipeError(_explain_unknown(str(error), classes, elsewhere or {})) from None
    return tuple(parsed)


def check_duplicate_keys(argv: list[str] | None) -> None:
    """RecipeError for a key that the ``--config`` YAML sets twice (YAML keeps the last silently), both lines named.
    (The command line may override a key, and a key given there twice is argparse's: the last wins.)"""
    import yaml

    args = list(sys.argv[1:] if argv is None else argv)
    if "--config" not in args[:-1]:
        return

    class Loader(yaml.SafeLoader):
        root: Any = None

        def construct_document(self, node: Any) -> Any:
            self.root = node
            return super().construct_document(node)

        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            seen: dict[Any, int] = {}
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=deep)
                line = key_node.start_mark.line + 1
                if isinstance(key, (list, dict)) or (node is self.root and not (isinstance(key, str) and key.strip())):
                    shown = {list: "a list", dict: "a mapping"}.get(type(key), repr(key))
                    raise RecipeError(
                        f"{path}, line {line}: the key {shown} is not a setting's name. Write `name: value`, as in "
                        "`set_size: 4` (a key is a word: not empty, null, a number or a list)."
                    )
                if node is self.root and isinstance(key, str) and key != key.strip():
                    raise RecipeError(
                        f"{path}, line {line}: the key {key!r} has spaces around the name, so it names no setting: "
                        f"write {key.strip()!r}."
                    )
                if key in seen:
                    raise RecipeError(
                        f"The recipe sets {key!r} twice (lines {seen[key]} and {key_node.start_mark.line + 1}): YAML "
                        "would keep the last silently. Keep one."
                    )
                seen[key] = key_node.start_mark.line + 1
            return super().construct_mapping(node, deep)

    path = args[args.index("--config") + 1]
    with open(path) as file:
        recipe = yaml.load(file, Loader=Loader)
    for key, value in recipe.items() if isinstance(recipe, dict) else ():
        check_flat_list(key, value)


def check_flat_list(key: Any, value: Any) -> None:
    """RecipeError for a recipe's list that holds a list or a null: no list field takes one, and TRL's parser would
    flatten the first (``[[x]]`` read as ``[x]``) and read the second as unset, without a word."""
    if not isinstance(value, list):
        return
    for item in value:
        if item is None or isinstance(item, list):
            raise RecipeError(
                f"{key}={value!r}: a list here holds plain values, and {item!r} is not one; write a flat list "
                "([a, b]) or drop the key for its default."
            )


def recipe_value(argv: list[str] | None, key: str) -> Any:
    """The value ``key`` gets from the command line (``--key v``, ``--key=v``) or else the ``--config`` YAML; None when
    neither sets it or the recipe cannot be read (``parse_recipe`` reports that)."""
    args = list(sys.argv[1:] if argv is None else argv)
    for i, arg in enumerate(args):
        for flag in (f"--{key}", f"--{key.replace('_', '-')}"):
            if arg == flag and i + 1 < len(args):
                return args[i + 1]
            if arg.startswith(flag + "="):
                return arg.split("=", 1)[1]
    return config_mapping(args).get(key)


def recipe_nulls(argv: list[str] | None) -> set[str]:
    """The keys the ``--config`` YAML or the command line (``--key null``, ``--key None``) sets to null: a null reads
    as the field's default, which a run says for the settings whose default it chooses."""
    args = list(sys.argv[1:] if argv is None else argv)
    nulls = {
        arg.removeprefix("--").split("=", 1)[0].replace("-", "_")
        for i, arg in enumerate(args)
        if arg.startswith("--")
        and (
            arg.split("=", 1)[-1] in ("null", "None")
            if "=" in arg
            else i + 1 < len(args) and args[i + 1] in ("null", "None")
        )
    }
    return nulls | {str(key) for key, value in config_mapping(args).items() if value is None}


def config_mapping(args: list[str]) -> dict[Any, Any]:
    """The ``--config`` YAML of a command line as a mapping; empty without one, or when it cannot be read or is no
    mapping (``parse_recipe`` reports that)."""
    import yaml

    if "--config" not in args[:-1]:
        return {}
    try:
        with open(args[args.index("--config") + 1]) as file:
            config = yaml.safe_load(file)
    except (OSError, yaml.YAMLError):
        return {}
    return config if isinstance(config, dict) else {}


def json_mapping(name: str, value: Any, what: str) -> dict[str, Any] | None:
    """A mapping field's value as a recipe or a command line gives it: a mapping, None, or a JSON string of a
    mapping (parsed, as TRL reads ``model_init_kwargs``); RecipeError naming the field otherwise (``what``: what it
    maps)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError as error:
            raise RecipeError(f"{name} is not JSON ({error}): give a mapping.") from None
    if value is not None and not isinstance(value, dict):
        raise RecipeError(f"{name} must be a mapping of {what}, got {value!r}.")
    return value


def _argument_error(message: str) -> None:
    """argparse's error, without its 200-line usage dump: ``--set_size/--set-size: invalid int value: 'four'``."""
    field_name = message.split("/", 1)[0].removeprefix("argument --").strip()
    said = message.split(": ", 1)[-1]
    if said.startswith("expected"):  # argparse reads a value such as -6.5e16 as another option
        said += f" (a value that starts with '-' goes after '=': --{field_name}=-6.5e16)"
    raise RecipeError(f"{field_name}: {said}.")


def _unknown_keys(message: str) -> list[str]:
    """The keys (``--name``) of TrlParser's unknown-key error; none for any other error."""
    if "Unknown arguments" not in message and "not used by" not in message:
        return []
    return [word.strip("'[],") for word in message.split() if word.strip("'[],").startswith("--")]


@contextlib.contextmanager
def _without_keys(argv: list[str] | None, keys: list[str]) -> Iterator[list[str]]:
    """``argv`` with ``keys`` (``--name``) gone from its command line and its ``--config`` YAML (a copy, in a
    temporary file removed on leaving)."""
    import yaml

    names = {key[2:] for key in keys}
    args = list(sys.argv[1:] if argv is None else argv)
    rest: list[str] = []
    skip = False
    for arg in args:
        name = arg[2:].split("=", 1)[0].replace("-", "_") if arg.startswith("--") else None
        if skip and name is None:
            skip = False
            continue
        skip = name in names and "=" not in arg
        if name not in names:
            rest.append(arg)
    path = None
    if "--config" in rest[:-1]:
        at = rest.index("--config") + 1
        with open(rest[at]) as file:
            recipe = yaml.safe_load(file)
        if isinstance(recipe, dict):
            handle, path = tempfile.mkstemp(suffix=".yaml")
            with os.fdopen(handle, "w") as file:
                yaml.safe_dump({k: v for k, v in recipe.items() if k not in names}, file)
            rest[at] = path
    try:
        yield rest
    finally:
        if path:
            os.unlink(path)


def _explain_unknown(message: str, classes: tuple[type, ...], elsewhere: dict[str, str]) -> str:
    """TrlParser's unknown-key error as the keys, each with where it belongs (``elsewhere``) or the closest known
    field."""
    keys = _unknown_keys(message)
    if not keys:
        return message
    known = {f.name for cls in classes for f in dataclasses.fields(cls)}
    hints = []
    for key in keys:
        if key[2:] in elsewhere:
            hints.append(f"{key[2:]!r} ({elsewhere[key[2:]]})")
            continue
        if key[2:] in FOREIGN_KEYS:
            hints.append(f"{key[2:]!r} ({FOREIGN_KEYS[key[2:]]})")
            continue
        close = difflib.get_close_matches(key[2:], known, n=1)
        hints.append(f"{key[2:]!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
    return f"Unknown recipe keys: {', '.join(hints)}. Remove or rename them."


def _accepts(hint: Any, value: Any) -> bool:
    """Whether ``value`` fits the type ``hint`` (int for float, any element type for an unparametrised container)."""
    if hint is Any:
        return True
    origin = typing.get_origin(hint)
    if origin in (Union, types.UnionType):
        return any(_accepts(option, value) for option in typing.get_args(hint))
    if origin is Literal:
        return value in typing.get_args(hint)
    if hint is type(None):
        return value is None
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if origin in (list, tuple):
        args = typing.get_args(hint)
        element = args[0] if args else Any
        return isinstance(value, list | tuple) and all(_accepts(element, item) for item in value)
    if origin is dict or hint is dict:
        return isinstance(value, dict)
    if isinstance(hint, type):
        return isinstance(value, hint) or (hint is str and isinstance(value, str))
    return True  # a type this check does not know: the class's own __post_init__ decides


def _describe(hint: Any) -> str:
    origin = typing.get_origin(hint)
    if origin in (Union, types.UnionType):
        return " or ".join(_describe(option) for option in typing.get_args(hint))
    if origin in (list, tuple):
        args = typing.get_args(hint)
        return f"a list of {_describe(args[0])}" if args else "a list"
    if origin is Literal:
        return f"one of {list(typing.get_args(hint))}"
    if hint is type(None):
        return "null"
    return getattr(hint, "__name__", str(hint))


def check_field_types(
    obj: Any, names: typing.Iterable[str] | None = None, none_allowed: bool = True, one_word_lists: bool = False
) -> None:
    """ValueError naming the first field of dataclass ``obj`` whose value does not fit its annotation: the field, the
    value, what it should be. None passes (argparse's "unset": the class decides) unless ``none_allowed`` is False.
    ``one_word_lists``: a string passes for a list of strings, as TRL's parser gives one value of a list field on the
    command line, and as its classes take it (``lora_target_modules: all-linear``, PEFT's shorthand)."""
    hints = typing.get_type_hints(type(obj))
    wanted = set(names) if names is not None else None
    for field in dataclasses.fields(obj):
        if not field.init or (wanted is not None and field.name not in wanted) or field.name not in hints:
            continue
        value = getattr(obj, field.name)
        hint = hints[field.name]
        if value is None and not none_allowed and not _accepts(hint, None):
            raise ValueError(f"{field.name}=None: it must be {_describe(hint)} (drop the key for its default).")
        if one_word_lists and isinstance(value, str) and _accepts(hint, [value]):
            continue
        if value is not None and not _accepts(hint, value):  # None: argparse's "unset"; the class decides
            example = ""
            options = [hint, *typing.get_args(hint)]
            if any(option in (list, tuple) or typing.get_origin(option) in (list, tuple) for option in options):
                example = f" (write [{value}] for one item)" if isinstance(value, str) else ""
            raise ValueError(
                f"{field.name}={value!r} is {type(value).__name__}: it must be {_describe(hint)}{example}."
            )
