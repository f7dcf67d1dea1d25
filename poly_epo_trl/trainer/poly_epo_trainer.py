"""PolyEPOTrainer: TRL's GRPOTrainer with the marginal set advantage of judged groups in place of GRPO's advantage.

TRL 1.16 has no advantage hook, so the trainer uses three seams and calls ``super()`` for everything else
(``tests/test_trl_seams.py`` pins them):

1. ``_generate`` returns the decoded completions: there each process's groups go to the judge's event loop in the
   background (``judging.GroupJudging.submit``), so the judge runs while TRL computes log-probs and rewards.
2. ``_calculate_rewards`` returns the rewards gathered over all processes: there the verdicts are joined and the
   method turns them into advantages (``methods``: the set advantage, GRPO+DIV's bonus, or none).
3. ``_generate_and_score_completions`` puts each process's slice of them into the output and the completions table.

A step's state lives in one ``step.Step``; a long run's (resume, preemption, a full disk) in ``keeper``. The only
change from GRPOTrainer is the advantage: everything else, the loss included, is TRL's.
"""

from __future__ import annotations

import textwrap
import warnings
from pathlib import Path
from typing import Any, ClassVar

from trl import GRPOTrainer

from ..judges.prompts import describe_tools
from . import step as steps
from .config import settings_names, trainer_config
from .judging import GroupJudging
from .keeper import LongRunKeeper
from .methods import METHODS, TrainingMethod
from .step import Generated, SetBatch, Step, replace_advantages, unscore_infinite
from .vllm_engine import vllm_seams

# TRL 1.16 reads `model.is_gradient_checkpointing` every step, which transformers 5.23 deprecates: the user cannot act
# on that warning (it is not about their settings), so it is silenced; a recipe using `gradient_checkpointing` warns.
warnings.filterwarnings("ignore", message=r"`is_gradient_checkpointing` is deprecated", category=FutureWarning)

POLY_EPO_PAPER = {
    "title": "Polychromic Exploratory Policy Optimization",
    "id": "2604.17654",
    "citation": textwrap.dedent("""\
        @article{orney2026polyepo,
            title        = {{Polychromic Exploratory Policy Optimization}},
            author       = {Orney and Hamid and others},
            year         = 2026,
            eprint       = {arXiv:2604.17654},
        }"""),
}


class PolyEPOTrainer(GRPOTrainer):
    """GRPOTrainer whose advantage is the marginal set advantage of the judged groups (``methods.SetAdvantage``).

    Takes GRPOTrainer's arguments, with ``args`` any ``GRPOConfig`` (kept as it is; the Poly-EPO settings then come
    as keyword arguments such as ``set_size=4``) or a ``PolyEPOConfig`` (the paper's defaults), plus ``judge=``: a
    ClusteringJudge, any function ``judge(prompt: str, completions: list[str]) -> list[int]``, or a judge spec.
    ``method=`` names another registered advantage (``methods.METHODS``).
    """

    _tag_names: ClassVar[list[str]] = ["trl", "grpo", "poly-epo"]
    _name = "Poly-EPO"
    _paper = POLY_EPO_PAPER
    method_name: ClassVar[str] = "poly_epo"
    default_output_suffix: ClassVar[str] = "Poly-EPO"

    def __init__(self, *args: Any, judge: Any = None, method: str | None = None, **kwargs: Any) -> None:
        values = {name: kwargs.pop(name) for name in settings_names() & set(kwargs)}
        self.method: TrainingMethod = METHODS.get(method or self.method_name)()
        args, kwargs, config, self.settings = trainer_config(
            type(self).__name__, self.default_output_suffix, args, kwargs, judge, values
        )
        if self.method.needs_judge and judge is None and self.settings.judge is None:
            raise ValueError(
                f"{type(self).__name__} needs a clustering judge: pass judge=... (a ClusteringJudge, a function "
                "judge(prompt, completions) -> list[int], or a spec such as 'answer') or set PolyEPOConfig.judge."
            )
        self.step: Step | None = None  # the generation batch in progress (then the last one)
        self.said: set[str] = set()  # the warnings said once a run
        self.judging: GroupJudging | None = None
        with vllm_seams(self, config, self.settings):
            super().__init__(*args, **kwargs)
        self.keeper = LongRunKeeper(self, self.settings.preemption_grace_seconds)
        if self.method.needs_judge:
            tools = describe_tools(self.tools) if self.tools else None  # what the agent could call, as TRL offers it
            self.judging = GroupJudging(self, self.settings.make_judge(judge, tools=tools), self.settings)
        self.method.install(self)

    @property
    def judge(self) -> Any:
        """The judge of the groups, as given or built (None for a method without one); ``judging.pipeline`` runs
        it with its chain and fallback."""
        return self.judging.pipeline.judge if self.judging else None

    @property
    def last_set_batch(self) -> SetBatch | None:
        """The judged groups of the last generation batch, with their rewards and advantages."""
        return self.step.batch if self.step else None

    def train(self, *args: Any, **kwargs: Any):
        """GRPOTrainer's ``train``, kept going through preemption and judge failures (``keeper``)."""
        return self.keeper.train(super().train, *args, **kwargs)

    def _get_train_sampler(self, dataset=None):
        return self.keeper.sampler(super()._get_train_sampler(dataset))

    def _save_checkpoint(self, model, trial) -> None:
        self.keeper.save_checkpoint(lambda: super(PolyEPOTrainer, self)._save_checkpoint(model, trial), trial)

    def _load_optimizer_and_scheduler(self, checkpoint) -> None:
        super()._load_optimizer_and_scheduler(checkpoint)
        self.keeper.load(checkpoint)

    def _generate(self, prompts: list):
        """Seam 1: as soon as the completions exist, judge this process's groups in the background (``output[3]``:
        the decoded completions; the rest as ``step.Generated`` reads it)."""
        output = super()._generate(prompts)
        self.step = Step(*self.mode_and_group_size())
        if self.judging is not None:
            self.judging.submit(self.step, prompts, output[3], Generated.of(output))
        return output

    def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):
        """Seam 2: the rewards (±inf as not scored), read to the host once, then the method's advantages from the
        judged groups."""
        mode, group_size = self.mode_and_group_size()
        rewards = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
        rewards, host = unscore_infinite(self, rewards, steps.to_host(rewards), mode)
        if self.step is None or self.step.mode != mode or self.step.batch is not None:
            self.step = Step(mode, group_size)  # not started by _generate (called on its own)
        return self.method.apply(self, self.step, rewards, host, prompts, completions)

    def _generate_and_score_completions(self, inputs):
        """Seam 3: the method's advantages, where it gave some, in place of GRPO's."""
        output = super()._generate_and_score_completions(inputs)
        if self.step is not None and self.step.advantages is not None:
            output, self.step.advantages = replace_advantages(self, output, self.step.advantages), None
        return output

    def mode_and_group_size(self) -> tuple[str, int]:
        """("train", num_generations) while training, ("eval", num_generations_eval) in evaluation."""
        mode = "train" if self.model.training else "eval"
        return mode, self.num_generations if mode == "train" else self.num_generations_eval

    def create_model_card(self, *args: Any, **kwargs: Any) -> None:
        """TRL's model card (the method, its paper and citation), with a section on this run's settings."""
        super().create_model_card(*args, **kwargs)
        card = Path(self.args.output_dir) / "README.md"
        if self.is_world_process_zero() and card.is_file():
            card.write_text(card.read_text().rstrip() + "\n\n" + self.card_section() + "\n")

    def card_section(self) -> str:
        """The model card's account of the run: the judge, the group and set sizes, the GRPO loss, the paper."""
        args, settings = self.args, self.settings
        judge = [self.judging.card_line(args.num_generations)] if self.judging else []
        return "\n".join(
            [
                f"## {self._name} settings",
                "",
                *judge,
                *self.method.card_lines(settings),
                f"- GRPO loss: `loss_type={args.loss_type}`, `scale_rewards={args.scale_rewards}`, "
                f"`beta={args.beta}`, clipping {args.epsilon} / {args.epsilon_high}, learning rate "
                f"{args.learning_rate:g}.",
                f"- Paper: [{self._paper['title']}](https://huggingface.co/papers/{self._paper['id']}) "
                f"(arXiv {self._paper['id']}).",
            ]
        )


class GRPODivTrainer(PolyEPOTrainer):
    """The paper's GRPO+DIV baseline: PolyEPOTrainer with the diversity bonus as its method
    (``methods.DiversityBonus``): Dr.GRPO on reward + lambda (N / |cluster(y)| - 1) / (N - 1)."""

    _tag_names: ClassVar[list[str]] = ["trl", "grpo", "grpo-div"]
    _name = "GRPO+DIV"
    method_name = "grpo_div"
    default_output_suffix = "GRPO-DIV"


class DrGRPOTrainer(PolyEPOTrainer):
    """The Dr.GRPO baseline: PolyEPOTrainer with GRPO's own advantage (``methods.GroupRelative``), no judge; it keeps
    the rest (rewards of ±inf unscored, preemption, exact resume). ``trainer: grpo`` in recipes."""

    _tag_names: ClassVar[list[str]] = ["trl", "grpo"]
    _name = "Dr. GRPO"
    _paper = GRPOTrainer._paper
    method_name = "grpo"
    default_output_suffix = "GRPO"


TRAINERS: dict[str, type[PolyEPOTrainer]] = {
    cls.method_name: cls for cls in (PolyEPOTrainer, GRPODivTrainer, DrGRPOTrainer)
}  # recipes' ``trainer:``
