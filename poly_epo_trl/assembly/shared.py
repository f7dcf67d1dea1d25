"""What the entry points share: logging, the recipe's rewards, the policy's tokenizer, which process writes."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn, TypeVar

from ..judges import JudgeError
from ..models import resolve_model
from ..recipe import RecipeError, refuse
from ..rewards import SandboxUnavailable, resolve_reward, stand_in, with_arguments
from ..trainer.preemption import Preempted
from ..trainer.resume import CheckpointFailed

A = TypeVar("A")
R = TypeVar("R")


def setup_logging() -> None:
    """INFO lines with time and source; no line per judge request (httpx2 logs each with its URL)."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("httpx2").setLevel(logging.WARNING)


def parse_and_run(
    parse: Callable[[Any], A], run: Callable[[A], R], argv: list[str] | None, judge_hint: str = ""
) -> tuple[A, R]:
    """Every entry point's body, and its one way out: logging set up, ``run(parse(argv))``, and no traceback for
    what a user can fix. A recipe error stops with its message and exit code 2 (said once per machine); a judge that
    failed, or a checkpoint that could not be written (a full disk), with its message (then ``judge_hint``) and exit
    code 1; a preemption with its message and 128 + the signal's number."""
    setup_logging()
    try:
        args = parse(argv)
        return args, run(args)
    except RecipeError as error:
        stop(f"error: {error}", 2, once=True)
    except JudgeError as error:
        stop(f"error: {error}{judge_hint}", 1)
    except CheckpointFailed as error:
        stop(f"error: {error}", 1)
    except Preempted as preempted:
        stop(str(preempted), preempted.exit_code)


def quiet_logging() -> None:
    """A long comparison's output (the demo's, a benchmark's workers'): a line per held-out evaluation, no progress
    bars, no library warnings."""
    import warnings

    import datasets
    import transformers

    logging.basicConfig(level=logging.WARNING, format="  %(message)s")
    logging.getLogger("poly_epo_trl.evaluation").setLevel(logging.INFO)  # a line per held-out evaluation
    logging.getLogger("transformers").setLevel(logging.ERROR)
    datasets.disable_progress_bars()
    transformers.utils.logging.disable_progress_bar()
    warnings.filterwarnings("ignore", category=FutureWarning)
    warnings.filterwarnings("ignore", category=UserWarning)


def stop(message: str, code: int, once: bool = False) -> NoReturn:
    """Exit with ``code`` after ``message`` on stderr, in one write so the lines of several processes do not
    interleave. ``once``: by local rank 0 only, for a message every process stops with (a recipe error), so each
    machine shows it once."""
    if not once or int(os.environ.get("LOCAL_RANK", "0")) == 0:
        sys.stderr.write(f"{message}\n")
        sys.stderr.flush()
    raise SystemExit(code)


def check_output_dir(path: str, create: bool = True) -> None:
    """RecipeError when ``output_dir`` cannot be created: a file stands where a folder is needed, or the system
    refuses the folder (``create``: it is made now, as training would make it; a dry run only looks)."""
    for parent in [Path(path), *Path(path).parents]:
        if parent.exists():
            if not parent.is_dir():
                raise RecipeError(f"output_dir={path!r}: {str(parent)!r} is a file, not a folder.")
            break
    if not create:
        return
    try:
        Path(path).mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise RecipeError(f"output_dir={path!r} cannot be created: {error.strerror or error}.") from None


def resolve_rewards(args: Any, weights: list[float] | None) -> list[Any]:
    """The rewards of the recipe, checked against ``weights`` (one per reward, or None): its reward model
    (``reward_model_name_or_path``, as a path or id for TRL to load) first, as ``trl grpo`` orders them, then the
    reward functions ``args.reward_funcs`` names (``args`` holds their settings)."""
    model = getattr(args, "reward_model_name_or_path", None)
    arguments = getattr(args, "reward_kwargs", None) or {}
    unknown = sorted(set(arguments) - set(args.reward_funcs))
    if unknown:
        raise RecipeError(
            f"reward_kwargs names {unknown}, which reward_funcs {list(args.reward_funcs)} does not: key each "
            "reward's arguments by its name as reward_funcs writes it."
        )

    def reward(name: str) -> Any:
        try:
            found = resolve_reward(name, args)
            return with_arguments(name, found, arguments[name]) if name in arguments else found
        except SandboxUnavailable as error:
            raise RecipeError(str(error)) from None
        except ValueError as error:  # an unknown name: looked past (one_pass) with a stand-in reading its columns
            refuse(str(error))
            return stand_in(name)

    rewards = [*([model] if model else []), *(reward(name) for name in args.reward_funcs)]
    if weights is not None and len(weights) != len(rewards):
        raise RecipeError(f"reward_weights has {len(weights)} entries for {len(rewards)} rewards.")
    return rewards


def load_tokenizer(
    model_name_or_path: str,
    revision: str | None = None,
    needed_by: str = "max_prompt_tokens",
    chat_template: str | None = None,
    **kwargs: Any,
) -> Any:
    """The policy's tokenizer (prompt lengths are counted in its tokens; agents need its chat template), with the
    recipe's ``chat_template`` (``template_text``) in place of its own where given."""
    from transformers import AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(resolve_model(model_name_or_path), revision=revision, **kwargs)
    except OSError as error:
        raise RecipeError(f"{needed_by} needs the model's tokenizer: {error}") from None
    if chat_template is not None:
        tokenizer.chat_template = template_text(chat_template)
    return tokenizer


def template_text(chat_template: str) -> str:
    """A recipe's ``chat_template``: the text of the file it names, or the template itself; RecipeError for a
    template Jinja cannot read."""
    from jinja2 import TemplateSyntaxError
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    path = Path(chat_template)
    text = chat_template
    if "{" not in chat_template and len(chat_template) < 4096:
        if not path.is_file():
            raise RecipeError(f"chat_template={chat_template!r}: neither a template (no Jinja tags) nor a file.")
        text = path.read_text()
    try:
        ImmutableSandboxedEnvironment().parse(text)
    except TemplateSyntaxError as error:
        raise RecipeError(f"chat_template: not a Jinja template ({error.message}, line {error.lineno}).") from None
    return text


def is_main_process() -> bool:
    """Whether this is the first process of the run (or the only one): it writes what the run writes once."""
    return int(os.environ.get("RANK", "0")) == 0
