"""A model's own settings held to the model before it loads: ``model_init_kwargs`` that neither ``from_pretrained``,
the model's config nor its class takes, and ``router_aux_loss_coef`` on a model without experts. transformers and TRL
refuse both only once the weights load (``__init__() got an unexpected keyword argument``, TRL's MoE check), with a
traceback; here the config alone (``AutoConfig``, a small file) answers, for a model already on disk."""

from __future__ import annotations

import functools
import inspect
import re
from typing import Any

from ..constants import BUILTIN_PREFIX
from ..recipe import RecipeError


@functools.cache
def loading_arguments() -> frozenset[str]:
    """The keywords ``PreTrainedModel.from_pretrained`` takes for itself: its parameters and the keywords it pops off
    ``**kwargs`` (transformers documents them there, not in the signature; read from the installed version's source,
    so a keyword a new version adds is known)."""
    from transformers import PreTrainedModel

    method = PreTrainedModel.from_pretrained
    popped = re.findall(r"kwargs\.pop\(\s*[\"'](\w+)[\"']", inspect.getsource(method))
    return frozenset(inspect.signature(method).parameters) | frozenset(popped)


def model_config(path: str, revision: str | None = None) -> Any:
    """The config of the model at ``path`` (a local folder or a cached Hub id), or None when it cannot be read here
    without the network or remote code (the load itself reports that)."""
    from transformers import AutoConfig

    try:
        return AutoConfig.from_pretrained(path, revision=revision, local_files_only=True)
    except (OSError, ValueError, KeyError):
        return None


def check_model_settings(name: str, revision: str | None, kwargs: dict[str, Any], coef: float | None) -> None:
    """``check_model_kwargs`` and ``check_router_aux_loss`` for the model ``name`` when either is set and its config
    is on disk (a built-in model is made only when the run loads it: not checked)."""
    if not (kwargs or coef) or name.startswith(BUILTIN_PREFIX):
        return
    config = model_config(name, revision)
    if config is None:
        return
    check_model_kwargs(config, kwargs)
    check_router_aux_loss(config, coef)


def check_model_kwargs(config: Any, kwargs: dict[str, Any]) -> None:
    """RecipeError for each key of ``model_init_kwargs`` that ``from_pretrained`` would hand to the model class's
    ``__init__`` and that it does not take: not one of ``from_pretrained``'s own, not a field of the config (which
    absorbs those), not a parameter of the class (a causal LM, as GRPOTrainer loads it)."""
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING

    left = {key: value for key, value in kwargs.items() if key not in loading_arguments()}
    if not left:
        return
    try:
        model_class = MODEL_FOR_CAUSAL_LM_MAPPING[type(config)]
    except KeyError:
        return  # not a causal LM transformers knows (remote code, a VLM): its own load decides
    _, unused = type(config).from_dict(config.to_dict(), return_unused_kwargs=True, **left)
    parameters = inspect.signature(model_class.__init__).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        return
    wrong = sorted(key for key in unused if key not in parameters)
    if wrong:
        raise RecipeError(
            f"model_init_kwargs gives {wrong}, which {model_class.__name__} does not take: not an argument of "
            f"from_pretrained, a field of its config ({type(config).__name__}) or of the class. Drop "
            f"{'them' if len(wrong) > 1 else 'it'}; a setting of the run goes in the recipe itself."
        )


def check_router_aux_loss(config: Any, coef: float | None) -> None:
    """RecipeError for ``router_aux_loss_coef`` on a model without experts (its config has no
    ``output_router_logits``), which TRL refuses once the model loads."""
    if not coef:
        return
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    if not hasattr(text, "output_router_logits"):
        raise RecipeError(
            f"router_aux_loss_coef={coef} weights a mixture-of-experts model's load-balancing loss, and "
            f"{type(config).__name__} has no experts: drop router_aux_loss_coef (or set it to 0)."
        )
