"""Training entry point: a YAML recipe (plus command-line overrides) in, a trained model out.

    accelerate launch --config_file recipes/accelerate_configs/zero2.yaml -m poly_epo_trl.train \\
        --config recipes/Qwen3-4B-Base/poly_epo/config_polaris.yaml
    python -m poly_epo_trl.train --config recipes/tiny/poly_epo/config_cpu.yaml --dry_run true

``trainer`` picks Poly-EPO, Dr.GRPO or GRPO+DIV, so switching a recipe's method is one line (the paper's three
recipes also differ in ``epsilon_high``, as the authors ran them).
Everything is checked before the model loads: unknown keys, dataset columns, rewards, the judge (one probe call).
"""

from __future__ import annotations

import logging
import sys
import typing
from dataclasses import asdict, field, fields, make_dataclass
from pathlib import Path
from typing import Any

import torch
from transformers.trainer_callback import PrinterCallback, ProgressCallback
from trl import ModelConfig, get_peft_config, get_quantization_config

from poly_epo_trl.assembly import (
    ScriptArguments,
    TrainingParts,
    assemble_training,
    cpu_slowdowns,
    hub_dataset_name,
    is_main_process,
    load_tokenizer,
    model_init_kwargs,
    parse_and_run,
    pass_at_k_callback,
    resume_checkpoint,
)
from poly_epo_trl.commands.launch import launch, launches
from poly_epo_trl.data import save_training_problems
from poly_epo_trl.evaluation.curves import FIGURE, plot_runs
from poly_epo_trl.methods import Method, get_method, shown_settings
from poly_epo_trl.methods.settings import default_of, meanings_at_one
from poly_epo_trl.models import resolve_model
from poly_epo_trl.recipe import RecipeError, one_pass, parse_recipe, recipe_nulls, recipe_value
from poly_epo_trl.tasks import task_defaults
from poly_epo_trl.trainer import PolyEPOConfig, PolyEPOTrainer
from poly_epo_trl.trainer.config import settings_owned_elsewhere
from poly_epo_trl.trainer.engines import (
    asked_engine,
    engine_mismatch,
    engine_of,
    final_model_from_checkpoint,
    save_final_model,
)
from poly_epo_trl.trainer.resume import finished_step, remove_checkpoints, run_identity

logger = logging.getLogger(__name__)
FIRST_PROMPT_CHARS = 2000  # the start-up log shows the first prompt up to this many characters


def parse(argv: list[str] | None = None) -> tuple[ScriptArguments, PolyEPOConfig, ModelConfig]:
    """The recipe's three configs; a built-in task (``dataset_name: builtin:<task>``) supplies the keys it declares
    (reward, judge, warm start, prompt format) where the recipe leaves them out. The settings the recipe's method
    owns (``Method.settings``, beyond the config's fields) are recipe keys too, held by the config
    (``take_method_keys``) beside its fields; another method's are refused, naming it."""
    named = recipe_value(argv, "dataset_name")
    dataset = named or ScriptArguments.dataset_name
    mixture = recipe_value(argv, "datasets")  # TRL's mixture is used instead of dataset_name, as `trl grpo` does
    if mixture and named:
        logger.warning(  # TRL's grpo script's words
            "Both `datasets` and `dataset_name` are provided. The `datasets` argument will be used to load the "
            "dataset and `dataset_name` will be ignored."
        )
    defaults = task_defaults(dataset) if isinstance(dataset, str) and not mixture else {}
    trainer = recipe_value(argv, "trainer") or ScriptArguments.trainer
    try:
        method = get_method(trainer)
    except ValueError as error:
        raise RecipeError(f"trainer={trainer!r}: {error}") from None
    classes = (ScriptArguments, PolyEPOConfig, ModelConfig)
    own = method_recipe_class(method, classes)
    elsewhere = {
        name: f"a setting of method {' or '.join(map(repr, owners))}; this recipe's trainer is {method.name!r}"
        for name, owners in settings_owned_elsewhere(method).items()
    }
    script_args, training_args, model_args, *method_args = parse_recipe(
        (*classes, *([own] if own else [])), argv, defaults, elsewhere
    )
    training_args.take_method_keys(
        {k: v for k, v in asdict(method_args[0]).items() if v is not None} if method_args else {}
    )
    return script_args, training_args, model_args


def method_recipe_class(method: Method, classes: tuple[type, ...]) -> type | None:
    """The recipe keys ``method`` owns beyond ``classes``' fields, as a dataclass ``TrlParser`` reads (None when it
    owns none): each optional and unset by default, so that only what the recipe sets reaches the resolver, which
    gives every other field the method's own default (fitted to the group where a size), as for a trainer keyword.
    TrlParser takes dataclasses only, and the method's own one cannot be given whole: fields the configs already
    have (``set_size``) would be two arguments of one name."""
    taken = {f.name for cls in classes for f in fields(cls)}
    own = [f for f in method.setting_fields() if f.name not in taken]
    if not own:
        return None
    hints = typing.get_type_hints(method.settings)
    return make_dataclass(
        f"{method.settings.__name__}Keys",
        [(f.name, hints[f.name] | None, field(default=None, metadata=help_of(f))) for f in own],
    )


def help_of(spec: Any) -> dict[str, Any]:
    """A field's help as TRL's parser passes it to argparse, with the method's own default (a marker such as
    ``FITS_GROUP`` is the resolver's, not an argument of ``add_argument``)."""
    return {"help": f"{spec.metadata.get('help', '')} Left unset: the method's own default ({default_of(spec)!r})."}


def main(argv: list[str] | None = None) -> Any:
    """``poly-epo train``: the recipe checked and assembled, then trained (``--dry_run``: checked only), through the
    entry points' one way out (``assembly.parse_and_run``). With ``--accelerate_config`` or ``--num_processes`` it
    launches ``accelerate`` first (``launch``). Returns the trainer (the assembled parts for a dry run)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if launches(argv):
        return launch(argv)
    return parse_and_run(prepare, train, argv)[1]


def prepare(argv: list[str] | None) -> tuple[ScriptArguments, PolyEPOConfig, ModelConfig, TrainingParts]:
    """The recipe's configs and everything assembled from them, checked before any model loads, in one pass
    (``recipe.one_pass``): a recipe from elsewhere meets its unknown keys, unknown rewards and missing columns at
    once."""
    with one_pass():
        script_args, training_args, model_args = parse(argv)
        parts = assemble_training(script_args, training_args, model_args)
    configs = (script_args, training_args, model_args)
    say_nulls(get_method(script_args.trainer), parts, recipe_nulls(argv), configs)
    return script_args, training_args, model_args, parts


def say_nulls(method: Method, parts: TrainingParts, nulls: set[str], configs: tuple[Any, ...] = ()) -> None:
    """Say each setting the recipe gave as null (``nulls``): a null reads as unset, and the run uses the value named
    here (a method's default or a size fitted to the group; another setting's value in ``configs``, the recipe's
    parsed configs, as the run has it)."""
    owned = {spec.name for spec in method.setting_fields()}
    for name in sorted(nulls):
        if name in owned:
            source = parts.method_sources.get(name, "default")
            value, where = (
                getattr(parts.method_settings, name),
                ("the method's default" if source == "default" else source),
            )
        else:
            holder = next((config for config in configs if hasattr(config, name)), None)
            if holder is None or getattr(holder, name) is None:  # null is the value the run uses: nothing to say
                continue
            value, where = getattr(holder, name), "the default"
        logger.warning(
            "%s: null in the recipe reads as unset: the run uses %s=%r (%s). Give a value, or leave the key out.",
            name,
            name,
            value,
            where,
        )


def chosen_line(method: Method, parts: TrainingParts) -> str:
    """The method's sizes that fit the group, as the run will use them and where each came from, and what a size of 1
    means for the method (the dry run's line)."""
    meanings = meanings_at_one(method, parts.method_settings)
    shown = []
    for name in shown_settings(method):
        value, source = getattr(parts.method_settings, name), parts.method_sources.get(name, "default")
        meaning = f"; {meanings[name]}" if name in meanings else ""
        shown.append(f"{name} {value!r} ({'the default' if source == 'default' else source}{meaning})")
    return f" ({', '.join(shown)})" if shown else ""


def train(prepared: tuple[ScriptArguments, PolyEPOConfig, ModelConfig, TrainingParts]) -> Any:
    """Train the prepared recipe and end the run as TRL's script ends it (``finish``); a dry run stops first."""
    script_args, training_args, model_args, parts = prepared
    dataset = parts.train_dataset
    first = repr(dataset[0]["prompt"])
    shown = first if len(first) <= FIRST_PROMPT_CHARS else f"{first[:FIRST_PROMPT_CHARS]}... ({len(first)} characters)"
    logger.info("%d training prompts; first: %s", len(dataset), shown)
    for message in cpu_slowdowns(training_args, torch.cuda.is_available()):
        logger.warning("Training on CPU with %s", message)
    if script_args.dry_run:
        print(
            f"dry run ok: trainer={script_args.trainer}{chosen_line(get_method(script_args.trainer), parts)}, "
            f"{len(dataset)} prompts, rewards {script_args.reward_funcs}, judge {training_args.judge!r}"
        )
        return parts
    trainer = run(script_args, training_args, model_args, parts)
    if trainer is not None:
        finish(trainer, script_args, training_args)
    return trainer


def run(
    script_args: ScriptArguments,
    training_args: PolyEPOConfig,
    model_args: ModelConfig,
    parts: TrainingParts,
    print_logs: bool = True,
) -> Any:
    """Train from the assembled recipe: record the training problems, make the trainer the recipe names (plus the
    held-out evaluation), resume from the last checkpoint, train, save. Returns the trainer, or None when
    ``output_dir`` already holds the finished run (its final model is made sure of). ``print_logs=False`` drops the
    log dicts and the progress bar (the held-out evaluation still logs a line each time)."""
    if script_args.overwrite_output_dir:
        checkpoint = None
        if is_main_process():
            remove_checkpoints(training_args.output_dir)
    else:
        identity = run_identity(get_method(script_args.trainer), parts.method_settings, training_args)
        checkpoint = resume_checkpoint(training_args, identity)
    done = finished_step(checkpoint, training_args.max_steps) if isinstance(checkpoint, str) else None
    if done is not None:
        print(f"{checkpoint} is step {done}, the run's last: nothing left to train.", flush=True)
        if is_main_process() and final_model_from_checkpoint(checkpoint, training_args.output_dir):
            print(f"{training_args.output_dir} had no final model: copied the one of {checkpoint}.", flush=True)
        return None
    if is_main_process():
        save_training_problems(
            training_args.output_dir,
            parts.training_problems,
            script_args.dataset_name,
            script_args.dataset_train_split,
        )
    trainer = make_trainer(script_args, training_args, model_args, parts, print_logs)
    trainer.train(resume_from_checkpoint=checkpoint)
    save_final_model(trainer, training_args.output_dir)
    save_curves(trainer, training_args.output_dir)
    return trainer


def finish(trainer: Any, script_args: ScriptArguments, training_args: PolyEPOConfig) -> None:
    """The end of a run, as TRL's GRPO script ends it: with ``push_to_hub``, the model, its card (the method, the
    judge, the set size, the paper) and the run's files go to the Hub repository ``hub_model_id``, named after the
    dataset; then ``trainer.end()`` finishes the trackers and the process group."""
    if training_args.push_to_hub:
        trainer.push_to_hub(dataset_name=hub_dataset_name(script_args))
        if trainer.accelerator.is_main_process:
            print(f"pushed to the Hub: {trainer.hub_model_id}", flush=True)
    trainer.accelerator.wait_for_everyone()  # no process ends the group while another is still at work
    trainer.end()


def save_curves(trainer: Any, output_dir: str) -> Path | None:
    """The run's log history (``trainer_state.json``) and its curves (``training_curves.png``, as ``poly-epo
    plot`` draws them) in ``output_dir``, by the main process; None elsewhere or when nothing was logged."""
    trainer.save_state()
    if not trainer.accelerator.is_main_process:
        return None
    try:
        return plot_runs([Path(output_dir)], Path(output_dir) / FIGURE)
    except ValueError:  # nothing logged (logging_steps past max_steps)
        return None


def make_trainer(
    script_args: ScriptArguments,
    training_args: PolyEPOConfig,
    model_args: ModelConfig,
    parts: TrainingParts,
    print_logs: bool = True,
) -> Any:
    """The trainer the recipe names, with its held-out evaluation, its engine checked and said; not yet trained."""
    model = resolve_model(model_args.model_name_or_path)
    training_args.model_init_kwargs = model_init_kwargs(model_args, training_args)
    method = get_method(script_args.trainer)
    kwargs: dict[str, Any] = {"judge": parts.judge} if method.needs_judge else {}
    if parts.audit_judge is not None:  # built and probed at the door
        kwargs["audit_judge"] = parts.audit_judge
    if script_args.chat_template is not None:  # the tokenizer as TRL loads it, with the recipe's template
        kwargs["processing_class"] = load_tokenizer(
            model, model_args.model_revision, "chat_template", script_args.chat_template, padding_side="left",
            truncation_side="left",
        )  # fmt: skip
    trainer = PolyEPOTrainer(
        method=method,
        check_inputs=False,  # the rows and the model's settings passed the recipe's door (assemble_training)
        model=model,
        reward_funcs=parts.reward_funcs,
        args=training_args,
        train_dataset=parts.train_dataset,
        eval_dataset=parts.eval_dataset,
        peft_config=get_peft_config(model_args),
        quantization_config=get_quantization_config(model_args),
        **kwargs,
        **parts.agent,
    )
    engine = engine_of(trainer.accelerator)
    mismatch = engine_mismatch(asked_engine(), engine)
    if mismatch:
        raise RecipeError(mismatch)
    if trainer.accelerator.is_main_process:
        print(engine.describe(), flush=True)
    if parts.eval_rows:
        trainer.add_callback(pass_at_k_callback(trainer, parts, script_args, training_args))
    if not print_logs:
        trainer.remove_callback(PrinterCallback)
        trainer.remove_callback(ProgressCallback)
    return trainer


if __name__ == "__main__":
    main()
