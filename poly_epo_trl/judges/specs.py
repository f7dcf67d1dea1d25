"""Judge specs: one typed object from the recipe to the request. ``JudgeSpec`` holds the judges a recipe names
(``"answer"``, ``"openai:<url>/<model>"``, ``"a,b"`` for a chain; parsed once, by ``JudgeSpec.parse``) and every
setting they are built with; ``build()`` makes the ``JudgePipeline`` the trainer, the evaluation and judge-agreement
use, and nothing is set on a judge after it is built.

Each kind is a factory in the ``JUDGES`` registry: ``factory(arg, spec)`` builds the judge of ``"kind:arg"`` from
the spec. A new kind of judge is one decorated factory here (or in your own module, imported before the recipe is
read).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from ..constants import DEGENERATE_CLUSTER_ID
from ..models import MODELS
from ..registry import Registry, import_callable
from ..text import TOOL_RESULT_CHARS
from .answer import AnswerJudge
from .anthropic import AnthropicJudge
from .base import ClusteringJudge
from .http import redact_url, refuse_credentials, split_base_url
from .llm import LMOptions
from .openai_server import OpenAICompatibleJudge, ServerOptions
from .pipeline import FALLBACKS, JudgePipeline
from .simple import CallableJudge, DistinctJudge
from .transformers import TransformersJudge

JUDGE_SPECS = (
    "answer[:boxed|last_number|text]",
    "distinct",
    "embedding[:<path>]",
    "anthropic[:<model>]",
    "openai:<base_url>/<model>",
    "openai (with judge_base_url and judge_model)",
    "transformers:<path>|smollm2",
    "python:<module>:<function>",
)


@dataclass(frozen=True)
class JudgeSpec:
    """The judges of a recipe and how to build them: ``judges`` as (kind, arg) pairs, the first judge then its chain
    (what the groups the first fails on are tried with); ``fallback`` when every judge of the chain failed
    (``pipeline.FALLBACKS``); ``max_outage_seconds`` a service may be down before the run stops (0: fall back at
    once); ``max_concurrency`` groups (or requests) in flight; ``degenerate_cluster_id``; ``tool_result_chars`` of
    each tool result an agent's trajectory shows; ``lm`` for language-model judges (``LMOptions``, the tools an
    agent could call among them); ``server`` for the OpenAI-compatible one (``ServerOptions``)."""

    judges: tuple[tuple[str, str], ...] = ()
    fallback: str = "raise"
    max_outage_seconds: float = 0.0
    max_concurrency: int = 32
    degenerate_cluster_id: int = DEGENERATE_CLUSTER_ID
    tool_result_chars: int | None = TOOL_RESULT_CHARS
    lm: LMOptions = field(default_factory=LMOptions)
    server: ServerOptions = field(default_factory=ServerOptions)

    def __post_init__(self) -> None:
        if self.fallback not in FALLBACKS:
            raise ValueError(f"judge_fallback must be one of {FALLBACKS}, got {self.fallback!r}.")

    @classmethod
    def parse(cls, text: str | None, **settings: Any) -> JudgeSpec:
        """The spec ``"kind[:arg][,kind[:arg]...]"`` with ``settings`` (the other fields): each kind registered, no
        credentials in a URL. ValueError naming the spec and the kinds otherwise."""
        judges = tuple(
            (kind.strip(), arg)
            for kind, _, arg in (p.strip().partition(":") for p in (text or "").split(","))
            if kind.strip()
        )
        if not judges:
            raise ValueError("The judge spec is empty: set judge (e.g. 'answer', 'embedding', 'openai').")
        for kind, arg in judges:
            if kind not in JUDGES:
                raise ValueError(
                    f"Unknown judge spec {text!r}: the kinds are {JUDGES.names()} ({', '.join(JUDGE_SPECS)}); join "
                    "several with ',' for a chain."
                )
            if kind == "openai" and arg:
                refuse_credentials(arg, "The judge spec's URL")
        return cls(judges, **settings)

    @property
    def text(self) -> str:
        """The spec as a recipe writes it."""
        return ",".join(f"{kind}:{arg}" if arg else kind for kind, arg in self.judges)

    def common(self) -> dict[str, Any]:
        """What every judge is built with (``ClusteringJudge``'s arguments)."""
        return {
            "max_concurrency": self.max_concurrency,
            "degenerate_cluster_id": self.degenerate_cluster_id,
            "tool_result_chars": self.tool_result_chars,
        }

    def with_tools(self, tools: str | None) -> JudgeSpec:
        """This spec, its language-model judges told what an agent could call (``prompts.describe_tools``)."""
        return replace(self, lm=replace(self.lm, tools=tools))

    def build(self) -> JudgePipeline:
        """The judges of the spec, each built by its kind's factory, in the spec's pipeline."""
        first, *chain = [JUDGES.get(kind)(arg, self) for kind, arg in self.judges]
        return JudgePipeline(first, chain, self.fallback, self.max_outage_seconds)

    def around(self, judge: ClusteringJudge | Callable[..., Any]) -> JudgePipeline:
        """A judge of the user's own (a ``ClusteringJudge``, or a function ``judge(prompt, completions) -> ids``) in
        this spec's pipeline (its fallback and outage wait)."""
        if isinstance(judge, JudgePipeline):
            return judge
        if not isinstance(judge, ClusteringJudge):
            if not callable(judge):
                raise TypeError(
                    f"judge must be a ClusteringJudge, a callable or a spec string, got {type(judge).__name__}."
                )
            judge = CallableJudge(judge, **self.common())
        return JudgePipeline(judge, (), self.fallback, self.max_outage_seconds)


JudgeFactory = Callable[[str, JudgeSpec], ClusteringJudge]
JUDGES: Registry[JudgeFactory] = Registry("judge")


@JUDGES.register("answer")
def answer_judge(arg: str, spec: JudgeSpec) -> ClusteringJudge:
    return AnswerJudge(mode=arg or "auto", **spec.common())


@JUDGES.register("distinct")
def distinct_judge(arg: str, spec: JudgeSpec) -> ClusteringJudge:
    return DistinctJudge(**spec.common())


@JUDGES.register("python")
def python_judge(arg: str, spec: JudgeSpec) -> ClusteringJudge:
    return CallableJudge(import_callable(arg, "judge", "use 'python:package.module:function'."), **spec.common())


@JUDGES.register("embedding")
def embedding_judge(arg: str, spec: JudgeSpec) -> ClusteringJudge:
    from .embedding import EmbeddingJudge

    return EmbeddingJudge(model=arg or None, **spec.common())


@JUDGES.register("anthropic")
def anthropic_judge(arg: str, spec: JudgeSpec) -> ClusteringJudge:
    return AnthropicJudge(arg or "claude-sonnet-4-5", spec.lm, **spec.common())


@JUDGES.register("openai")
def openai_judge(arg: str, spec: JudgeSpec) -> ClusteringJudge:
    """``openai:<base_url>/<model>``, ``openai:<base_url>`` with the server's ``model``, or ``openai`` with the
    server's ``base_url`` (and ``model``, else the server's only model)."""
    server = spec.server
    if arg and server.base_url:
        raise ValueError(
            f"the URL is given twice (in the spec and judge_base_url={redact_url(server.base_url)!r}): keep one."
        )
    if not arg and not server.base_url:
        raise ValueError("'openai' needs the server: set judge_base_url (e.g. http://127.0.0.1:8000/v1).")
    if arg and server.model is None:
        base_url, model = split_base_url(arg)
        server = replace(server, base_url=base_url, model=model)
    elif arg:
        server = replace(server, base_url=arg)
    return OpenAICompatibleJudge(server, spec.lm, **spec.common())


@JUDGES.register("transformers")
def transformers_judge(arg: str, spec: JudgeSpec) -> ClusteringJudge:
    """``transformers:<path>``, or the name of a built-in model (``transformers:smollm2``)."""
    if not arg:
        raise ValueError("Judge spec 'transformers' needs a model: 'transformers:<path>' or 'transformers:smollm2'.")
    path = MODELS.get(arg)() if arg in MODELS else arg
    return TransformersJudge(path, spec.lm, **spec.common())


def pipeline_of(judge: str | ClusteringJudge | Callable[..., Any]) -> JudgePipeline:
    """A judge given any way, as the pipeline that runs it with the defaults (no chain; a failure raises): a spec
    string built, a judge or function of the user's own put in a pipeline, a ``JudgePipeline`` as it is."""
    return JudgeSpec.parse(judge).build() if isinstance(judge, str) else JudgeSpec().around(judge)
