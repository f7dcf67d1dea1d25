"""Recipes assembled: each entry point parses its recipe, hands it here, and runs what comes back. Everything a
recipe names is resolved and checked here, before a model loads: ``training`` for ``poly-epo train``,
``evaluation`` for ``poly-epo eval``, ``agreement`` for ``poly-epo judge-agreement``, ``shared`` for what they
all need (and the entry points' one way out, ``parse_and_run``); ``held_out``: a training recipe's held-out
evaluation wired to its trainer; ``resume``: the checkpoint a training recipe continues from."""

from .agreement import AgreementArguments, AgreementParts, assemble_agreement
from .evaluation import EvalArguments, EvaluationParts, assemble_evaluation, make_episode_sampler, make_sampler
from .held_out import held_out_agent, held_out_scoring, held_out_summary, pass_at_k_callback
from .resume import resume_checkpoint
from .shared import (
    is_main_process,
    load_tokenizer,
    parse_and_run,
    quiet_logging,
    resolve_rewards,
    setup_logging,
    stop,
)
from .training import (
    ScriptArguments,
    TrainingParts,
    assemble_training,
    check_judge,
    cpu_slowdowns,
    hub_dataset_name,
    model_init_kwargs,
)

__all__ = [
    "AgreementArguments",
    "AgreementParts",
    "EvalArguments",
    "EvaluationParts",
    "ScriptArguments",
    "TrainingParts",
    "assemble_agreement",
    "assemble_evaluation",
    "assemble_training",
    "check_judge",
    "cpu_slowdowns",
    "held_out_agent",
    "held_out_scoring",
    "held_out_summary",
    "hub_dataset_name",
    "is_main_process",
    "load_tokenizer",
    "make_episode_sampler",
    "make_sampler",
    "model_init_kwargs",
    "parse_and_run",
    "pass_at_k_callback",
    "quiet_logging",
    "resolve_rewards",
    "resume_checkpoint",
    "setup_logging",
    "stop",
]
