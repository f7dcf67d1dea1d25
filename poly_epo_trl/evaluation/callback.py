"""In-training evaluation: pass@k, maj@n and distinct correct clusters on held-out problems every ``eval_steps``."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any

from accelerate.utils import gather_object
from transformers import TrainerCallback
from trl.models.utils import unwrap_model_for_generation

from .episodes import Agent, EpisodeSampler
from .report import summarize
from .runner import episode_metrics, policy_metrics
from .sampling import SamplingSettings, TrainerVLLMSampler, trainer_engine
from .scoring import Scorer

logger = logging.getLogger(__name__)


class PassAtKCallback(TrainerCallback):
    """Samples ``settings.num_samples`` completions per held-out problem with the policy being trained (for an
    ``agent``, plays as many episodes, as training plays them) and logs
    ``eval_pass@k`` (k = 1, 2, 4, ..., n), ``eval_maj@n``, ``eval_vote_share``, ``eval_pcmd`` and
    ``eval_effective_modes`` (the correct answers' judge-free diversity) and ``eval_distinct_correct_clusters``
    through the trainer (``log_beside_training``: the log history, and wandb and trackio under ``eval/``, as
    transformers names an evaluation's metrics). Each process samples its share of the problems, with the run's
    colocated vLLM engine where it generates with one (``sampling.trainer_engine``), else with transformers; the log
    says which, once. It also evaluates after the last step, and with ``on_start`` before the first (step 0, the
    start of every curve)."""

    def __init__(
        self,
        trainer: Any,
        rows: Sequence[dict[str, Any]],
        scorer: Scorer,
        settings: SamplingSettings,
        eval_steps: int,
        correct_reward_threshold: float = 1.0,
        batch_size: int = 64,
        on_start: bool = False,
        agent: Agent | None = None,
    ) -> None:
        if eval_steps < 1:
            raise ValueError(f"eval_steps={eval_steps}: evaluate every 1 or more steps.")
        if not rows:
            raise ValueError("PassAtKCallback needs at least one held-out problem.")
        self.trainer, self.rows, self.scorer, self.settings = trainer, list(rows), scorer, settings
        self.eval_steps, self.correct_reward_threshold, self.batch_size = (
            eval_steps,
            correct_reward_threshold,
            batch_size,
        )
        self.on_start, self.agent = on_start, agent
        self.said = False  # the sampler chosen is said in the log once

    @classmethod
    def for_trainer(
        cls,
        trainer: Any,
        rows: Sequence[dict[str, Any]] | Any,
        eval_steps: int,
        num_samples: int = 16,
        judge: Any = None,
        on_start: bool = False,
    ) -> PassAtKCallback:
        """The callback for any TRL ``GRPOTrainer`` (a stock one included): ``rows`` (a list of dicts or a dataset
        with TRL's ``prompt`` column and the columns its rewards read) scored by the trainer's own reward functions
        and weights, sampled as the trainer samples (its completion length, temperature and seed), ``num_samples``
        each; ``judge`` (optional: a ``ClusteringJudge``, a function ``judge(prompt, completions)`` or a spec)
        adds ``eval_distinct_correct_clusters``. Add it with ``trainer.add_callback(...)``."""
        from torch import nn

        rewards = [f for f in trainer.reward_funcs if not isinstance(f, nn.Module)]
        weights = [float(w) for f, w in zip(trainer.reward_funcs, trainer.reward_weights, strict=True) if f in rewards]
        settings = SamplingSettings(
            num_samples=num_samples,
            max_new_tokens=trainer.args.max_completion_length,
            temperature=trainer.args.temperature,
            seed=trainer.args.seed,
        )
        scorer = Scorer(rewards, weights, judge)
        return cls(trainer, list(rows), scorer, settings, eval_steps, on_start=on_start)

    def evaluate(self) -> dict[str, float]:
        start = time.perf_counter()
        accelerator = self.trainer.accelerator
        mine = list(range(accelerator.process_index, len(self.rows), accelerator.num_processes))
        engine, why = trainer_engine(self.trainer) if self.agent is None else (None, "an agent's episodes")
        if not self.said:
            logger.warning(
                "The in-training evaluation samples with %s (%s).",
                "vLLM" if engine is not None else "transformers",
                why,
            )
            self.said = True
        if engine is not None:
            sampler = TrainerVLLMSampler(self.trainer, engine, self.settings)
            local = policy_metrics(
                None, None, self.rows, mine, self.scorer, self.settings, self.correct_reward_threshold, sampler=sampler
            )
            return self.log_summary(local, start)
        with unwrap_model_for_generation(self.trainer.model_wrapped, accelerator) as model:
            if self.agent is None:
                local = policy_metrics(
                    model,
                    self.trainer.processing_class,
                    self.rows,
                    mine,
                    self.scorer,
                    self.settings,
                    self.correct_reward_threshold,
                    self.batch_size,
                )
            else:
                sampler = EpisodeSampler.for_trainer(
                    self.trainer, self.settings, self.agent, model=model, batch_size=self.batch_size
                )
                local = episode_metrics(sampler, self.rows, mine, self.scorer, self.correct_reward_threshold)
        return self.log_summary(local, start)

    def log_summary(self, local: list[dict[str, Any]], start: float) -> dict[str, float]:
        """The metrics of every process's problems (``local``: this process's), said in the log."""
        summary = summarize(gather_object(local), num_resamples=1)
        metrics = {f"eval_pass@{k}": v for k, v in zip(summary["ks"], summary["pass_at_k"]["mean"], strict=True)}
        metrics[f"eval_maj@{summary['num_samples']}"] = summary["maj_at_k"]["mean"][-1]
        metrics["eval_vote_share"] = summary["vote_share"]["mean"]
        if summary["distinct_correct_clusters"] is not None:
            metrics["eval_distinct_correct_clusters"] = summary["distinct_correct_clusters"]["mean"]
        if summary["pcmd"] is not None:  # defined on the problems with two or more correct samples
            metrics["eval_pcmd"] = summary["pcmd"]["mean"]
            metrics["eval_effective_modes"] = summary["effective_modes"]["mean"]
        metrics["eval_pcmd_problems"] = summary["pcmd_problems"]
        logger.info(
            "step %d: held-out pass@1 %.3f, pass@%d %.3f, distinct correct clusters %s, PCMD %s (%d problems, %.1fs)",
            self.trainer.state.global_step,
            metrics["eval_pass@1"],
            summary["num_samples"],
            summary["pass_at_k"]["mean"][-1],
            f"{metrics['eval_distinct_correct_clusters']:.2f}" if "eval_distinct_correct_clusters" in metrics else "-",
            f"{metrics['eval_pcmd']:.3f} on {summary['pcmd_problems']}" if "eval_pcmd" in metrics else "-",
            len(self.rows),
            time.perf_counter() - start,
        )
        return metrics

    def on_train_begin(self, args, state, control, **kwargs):
        if self.on_start and state.global_step == 0:
            log_beside_training(self.trainer, self.evaluate())

    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step % self.eval_steps == 0 or state.global_step == state.max_steps:
            log_beside_training(self.trainer, self.evaluate())


def log_beside_training(trainer: Any, metrics: dict[str, float]) -> None:
    """``metrics`` into ``trainer``'s log history and its loggers (wandb, trackio, ...) through transformers'
    ``Trainer.log``, not through the trainer's own: ``GRPOTrainer.log`` folds in the training metrics it gathered
    since the last logging step, and clears them, so an evaluation between two logging steps would take them off the
    training line (``tests/test_evaluation.py`` checks that GRPOTrainer still does, and that the training lines keep
    them). A log clears the step's ``should_log``, which would drop the training line of a step that is both a
    logging and an evaluation step: it is set back."""
    from transformers import Trainer

    should_log = trainer.control.should_log
    Trainer.log(trainer, metrics)
    trainer.control.should_log = should_log
