"""In-training evaluation: pass@k, maj@n and distinct correct clusters on held-out problems every ``eval_steps``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from accelerate.utils import gather_object
from transformers import TrainerCallback
from trl.models.utils import unwrap_model_for_generation

from .report import problem_metrics, summarize
from .sampling import SamplingSettings, TransformersSampler
from .scoring import Scorer


class PassAtKCallback(TrainerCallback):
    """Samples ``settings.num_samples`` completions per held-out problem with the policy being trained and logs
    ``eval/pass@k`` (k = 1, 2, 4, ..., n), ``eval/maj@n``, ``eval/vote_share`` and ``eval/distinct_correct_clusters``
    through the trainer (so to wandb and the log history). Each process samples its share of the problems."""

    def __init__(
        self,
        trainer: Any,
        rows: Sequence[dict[str, Any]],
        scorer: Scorer,
        settings: SamplingSettings,
        eval_steps: int,
        correct_threshold: float = 1.0,
        batch_size: int = 64,
    ) -> None:
        if eval_steps < 1:
            raise ValueError(f"eval_steps={eval_steps}: evaluate every 1 or more steps.")
        if not rows:
            raise ValueError("PassAtKCallback needs at least one held-out problem.")
        self.trainer, self.rows, self.scorer, self.settings = trainer, list(rows), scorer, settings
        self.eval_steps, self.correct_threshold, self.batch_size = eval_steps, correct_threshold, batch_size

    def evaluate(self) -> dict[str, float]:
        accelerator = self.trainer.accelerator
        mine = list(range(accelerator.process_index, len(self.rows), accelerator.num_processes))
        with unwrap_model_for_generation(self.trainer.model_wrapped, accelerator) as model:
            sampler = TransformersSampler(model, self.trainer.processing_class, self.settings, self.batch_size)
            texts = sampler.sample([self.rows[i]["prompt"] for i in mine], mine) if mine else []
        scored = self.scorer.score([self.rows[i] for i in mine], texts) if mine else []
        if self.scorer.judge is not None:
            self.scorer.judge.pop_stats()  # keep the trainer's judge/* metrics about training groups only
        local = [
            problem_metrics(s["rewards"], s["answers"], s["clusters"], self.correct_threshold, seed=i)
            for i, s in zip(mine, scored, strict=True)
        ]
        summary = summarize(gather_object(local), num_resamples=1)
        metrics = {f"eval/pass@{k}": v for k, v in zip(summary["ks"], summary["pass_at_k"]["mean"], strict=True)}
        metrics[f"eval/maj@{summary['num_samples']}"] = summary["maj_at_k"]["mean"][-1]
        metrics["eval/vote_share"] = summary["vote_share"]["mean"]
        if summary["distinct_correct_clusters"] is not None:
            metrics["eval/distinct_correct_clusters"] = summary["distinct_correct_clusters"]["mean"]
        return metrics

    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step % self.eval_steps == 0:
            self.trainer.log(self.evaluate())
