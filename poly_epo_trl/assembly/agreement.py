"""``poly-epo judge-agreement``'s recipe assembled: the eval recipe's rows and sampling, the judges to compare, and
the groups they will judge (``AgreementParts``): a ``poly-epo eval`` folder's samples, a training run's audit trail
(with its labels), or samples drawn now from the recipe's first checkpoint."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from ..data import format_dataset
from ..evaluation.runner import sample_missing
from ..evaluation.store import SampleStore, read_records
from ..judges.audit import read_audit
from ..models import resolve_model
from ..recipe import RecipeError
from ..tasks import load_rows
from ..text import prompt_text
from .evaluation import EvalArguments, make_sampler


@dataclass
class AgreementArguments(EvalArguments):
    """The eval recipe's rows and sampling, plus the judges to compare."""

    judges: list[str] = field(
        default_factory=lambda: ["answer", "embedding"],
        metadata={
            "help": "Two or more judge specs to compare (any spec `judge` takes: answer, embedding, openai, ...)."
        },
    )
    samples: str | None = field(
        default=None,
        metadata={
            "help": "A checkpoint folder `poly-epo eval` wrote (output_dir/<label>, with samples.jsonl) on this "
            "recipe's rows; unset: sample the first model_name_or_path now (into output_dir/<label>)."
        },
    )
    judged_groups: str | None = field(
        default=None,
        metadata={
            "help": "A training run's audit trail (its output_dir, or the judged_groups.jsonl there): its groups, and "
            "the labels the run's judge gave them as the labeling `recorded` (groups that fell back have none), and "
            "its audit judge's as `audit:<judge>` where it had one (the audited groups only); then one judge is "
            "enough. A person's labels: a copy of the file with its cluster_ids edited."
        },
    )
    output_dir: str = field(default="outputs/judge_agreement", metadata={"help": "agreement.json, agreement.png."})

    def __post_init__(self) -> None:
        super().__post_init__()
        least = 1 if self.judged_groups else 2
        if len(self.judges) < least or len(set(self.judges)) != len(self.judges):
            also = " (or give --judged_groups, whose recorded labels are one)" if least == 2 else ""
            count = "one" if least == 1 else "two"
            raise RecipeError(f"judges={self.judges}: name {count} or more different judge specs to compare{also}.")
        if self.samples and self.judged_groups:
            raise RecipeError("samples and judged_groups both set: the groups come from one of them.")


def load_groups(args: AgreementArguments) -> list[tuple[str, list[str]]]:
    """(prompt, completions) per problem: from ``args.samples`` or sampled now; the first ``judge_samples`` of each."""
    rows = list(format_dataset(load_rows(args, args.dataset_test_split), args, args.max_problems))
    if not rows:
        raise RecipeError("The dataset is empty after formatting.")
    if args.samples:
        folder = Path(args.samples)
        saved = json.loads((folder / "settings.json").read_text()) if (folder / "settings.json").exists() else {}
        different = [
            k for k in ("dataset_name", "dataset_test_split", "prompt_column") if saved.get(k) != getattr(args, k)
        ]
        if different or not (folder / "samples.jsonl").exists():
            why = f"drawn with other {different}" if different else "no samples.jsonl there"
            raise RecipeError(f"samples={args.samples!r}: {why}; give the recipe `poly-epo eval` used, or its folder.")
        texts = {i: r["completions"] for i, r in read_records(folder / "samples.jsonl").items()}
    else:
        label, spec = args.checkpoints()[0]
        path = resolve_model(spec)
        store = SampleStore(Path(args.output_dir) / label, args.store_settings(path), args.overwrite)
        samples = store.read("samples")
        sample_missing(rows, store, samples, lambda: make_sampler(args, label, path), args.chunk_size, label)
        texts = {i: r["completions"] for i, r in samples.items()}
    order = [i for i in sorted(texts) if i < len(rows)]  # a store may hold more problems than max_problems asks
    return [(prompt_text(rows[i]["prompt"]), texts[i][: args.judge_samples]) for i in order]


def load_judged_groups(path: str) -> AgreementParts:
    """A run's audit trail as groups, the labels its judge gave them (None where the group fell back) and the
    seconds the judge took; where the run had an audit judge, its labels too (None where it did not audit the group
    or fell back)."""
    try:
        records = read_audit(path)
    except (OSError, ValueError) as error:
        raise RecipeError(f"judged_groups={path!r}: {error}") from None
    if not records:
        raise RecipeError(f"judged_groups={path!r}: no judged groups there (judge_audit_fraction 0, or no step ran).")
    groups = [(r["problem"], r["completions"]) for r in records]
    labels = [r["cluster_ids"] if r["fallback"] is None else None for r in records]
    audits = [r.get("audit") for r in records]
    audited = [a["cluster_ids"] if a and a["fallback"] is None else None for a in audits]
    if not any(audited):
        return AgreementParts(groups, labels, sum(r["seconds"] for r in records))
    audit_judge = next(a["judge"] for a in audits if a)
    seconds = sum(a["seconds"] for a in audits if a)
    return AgreementParts(groups, labels, sum(r["seconds"] for r in records), audited, seconds, audit_judge)


@dataclass
class AgreementParts:
    """The groups every judge will cluster, (problem, completions) each; with ``judged_groups``, the labels the run's
    judge gave them (None where a group fell back) and the seconds it took."""

    groups: list[tuple[str, list]]
    recorded: list[list[int] | None] | None = None
    recorded_seconds: float = 0.0
    audited: list[list[int] | None] | None = None  # the run's audit judge's labels (None: a group it did not audit)
    audited_seconds: float = 0.0
    audit_judge: str | None = None


def assemble_agreement(args: AgreementArguments) -> AgreementParts:
    """The groups of ``args``: from a run's audit trail, from a ``poly-epo eval`` folder, or sampled now."""
    if args.judged_groups:
        return load_judged_groups(args.judged_groups)
    return AgreementParts(load_groups(args))
