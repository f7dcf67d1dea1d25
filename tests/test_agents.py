"""Agents trained with PolyEPOTrainer and GRPODivTrainer as with GRPOTrainer: ``tools``, one and several
``environment_factory`` environments, rewards and data owned by the environment, ``rollout_func``, malformed tool
calls, a tool returning an image to a vision-language model; the judge reads whole trajectories (roles, tool calls,
tool results, in order).

Generation is scripted (``agents.scripted_generate``), as in TRL's own agent tests: a tiny random model never writes
a tool call. TRL's tool loop, response parser, environments and loss, and our judging and advantages, run for real.
"""

from __future__ import annotations

import os
import re
from unittest.mock import patch

import pytest
import torch
from agents import (
    COUNTER_PLANS,
    EASEL_PLANS,
    Counter,
    Dial,
    Easel,
    plan_script,
    save_tool_model,
    save_vision_tool_model,
    scripted_generate,
    tool_call,
)
from datasets import Dataset
from tiny import small_config
from transformers import AutoTokenizer

from poly_epo_trl import GRPODivTrainer, PolyEPOConfig, PolyEPOTrainer, marginal_set_advantages
from poly_epo_trl.advantages import diversity_bonus
from poly_epo_trl.judges import ClusteringJudge
from poly_epo_trl.judges.prompts import JudgeTemplate, response_blocks
from poly_epo_trl.text import final_text, plan_text, trajectory_turns

os.environ["TRL_EXPERIMENTAL_SILENCE"] = "1"
TRAINERS = [PolyEPOTrainer, GRPODivTrainer]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return save_tool_model(tmp_path_factory.mktemp("tool_model"))


def config(tmp_path, **overrides) -> PolyEPOConfig:
    return small_config(tmp_path / "out", **{"max_completion_length": 512, "learning_rate": 1e-2, **overrides})


def counter_rows(n: int = 4, **columns) -> Dataset:
    return Dataset.from_dict(
        {"prompt": [[{"role": "user", "content": "Make the counter reach 4."}]] * n, "target": [4] * n, **columns}
    )


class PlanJudge:
    """A ``python:`` judge: one cluster per sequence of tool calls (the plan), degenerate without a final answer.
    It records what it was given."""

    def __init__(self) -> None:
        self.groups: list[list] = []

    def __call__(self, prompt: str, completions: list) -> list[int]:
        self.groups.append(completions)
        plans: dict[str, int] = {}
        return [
            100 if not final_text(c) or "<tool_call>" in final_text(c) else plans.setdefault(plan_text(c), len(plans))
            for c in completions
        ]


def train(trainer) -> None:
    script = plan_script(COUNTER_PLANS)
    with patch.object(trainer.model, "generate", side_effect=scripted_generate(trainer.processing_class, script)):
        trainer.train()


def check_set_advantages(trainer) -> None:
    """Poly-EPO: the batch's advantages are the set advantages of its rewards and judged ids. GRPO+DIV: the
    diversity bonus column is that of the judged ids."""
    batch = trainer.last_set_batch
    if trainer.method.name == "poly_epo":
        expected = marginal_set_advantages(batch.rewards.nan_to_num(0.0), batch.cluster_ids, trainer.args.set_size)
        torch.testing.assert_close(batch.advantages, expected)
    else:
        logged = trainer.state.log_history[-2]
        bonus = diversity_bonus(batch.cluster_ids, 1.0).mean().item()
        assert logged["rewards/diversity_bonus/mean"] == pytest.approx(bonus, abs=1e-3)


def roles(messages: list) -> list[str]:
    return [m["role"] for m in messages]


@pytest.mark.parametrize("trainer_cls", TRAINERS)
def test_an_environment_owning_its_reward(trainer_cls, model_dir, tmp_path):
    judge = PlanJudge()
    trainer = trainer_cls(
        model=str(model_dir),
        args=config(tmp_path),
        train_dataset=counter_rows(),
        environment_factory=Counter,
        judge=judge,
    )
    train(trainer)
    history = trainer.state.log_history
    assert history[-1]["train_loss"] == history[-1]["train_loss"]  # not NaN
    assert any(h.get("tools/call_frequency", 0) > 0 for h in history)
    trajectories = [c for group in judge.groups for c in group]
    assert len(trajectories) == 2 * 8
    two_calls = [c for c in trajectories if len([m for m in c if m.get("tool_calls")]) == 2]
    assert two_calls, "no rollout of the batch made two tool calls"
    for c in two_calls:
        assert roles(c) == ["assistant", "tool", "assistant", "tool", "assistant"]
        assert [m["tool_calls"][0]["function"]["name"] for m in c if m.get("tool_calls")] in (
            ["add", "double"],
            ["double", "add"],
        )
        assert c[-1]["content"] == "It is 4."
    # the environment's reward: exactly the rollouts whose counter reached 4 (add 4; add 2, double; double, add 4)
    reached = {'add({"n": 4})\nIt is 4.', 'add({"n": 2})\ndouble({})\nIt is 4.', 'double({})\nadd({"n": 4})\nIt is 4.'}
    batch = trainer.last_set_batch
    last = judge.groups[-1]
    assert batch.rewards.flatten().tolist()[: len(last)] == [float(plan_text(c) in reached) for c in last]
    check_set_advantages(trainer)


@pytest.mark.parametrize("trainer_cls", TRAINERS)
def test_standalone_tools_with_a_reward_function(trainer_cls, model_dir, tmp_path):
    counter = Counter()
    counter.reset()

    def add(n: int) -> int:
        """
        Add n to the counter.

        Args:
            n: The number to add.

        Returns:
            The counter's new value.
        """
        return counter.add(n)

    def answered_four(completions, **kwargs) -> list[float]:
        return [float(final_text(c) == "It is 4.") for c in completions]

    judge = PlanJudge()
    trainer = trainer_cls(
        model=str(model_dir),
        reward_funcs=answered_four,
        args=config(tmp_path),
        train_dataset=counter_rows(),
        tools=[add],
        judge=judge,
    )
    train(trainer)
    assert counter.value > 0  # the tool ran
    calls = [m["tool_calls"][0]["function"]["name"] for g in judge.groups for c in g for m in c if m.get("tool_calls")]
    assert "add" in calls and "triple" in calls  # unknown tools are shown to the judge as called
    failures = [m["content"] for g in judge.groups for c in g for m in c if m["role"] == "tool"]
    assert any("triple" in f for f in failures)  # TRL answers an unknown tool with an error message
    check_set_advantages(trainer)


class AsyncCounter(Counter):
    """A counter that scores itself asynchronously (as an LM judge would)."""

    async def get_reward(self) -> float:
        return float(self.value == self.target)


def dial_reward(completions: list, environments: list, **kwargs) -> list[float | None]:
    """The reward of the rollouts bound to a ``Dial`` (which owns none): 1 for a final answer; None elsewhere (one
    per pair: given fewer environments than completions it returns too few, which the check refuses)."""
    pairs = zip(completions, environments, strict=False)
    return [float(bool(final_text(c))) if isinstance(e, Dial) else None for c, e in pairs]


@pytest.mark.parametrize("owner", [Counter, AsyncCounter])
def test_a_mix_of_environments_one_scoring_itself(owner, model_dir, tmp_path):
    """A dict environment_factory where one environment owns its reward (``get_reward``, sync or async) and the
    other is scored by ``reward_funcs``: trained, each rollout scored by its own source; TRL's environment reward
    then called as its contract allows, with the environments alone (one reward per environment, None for the
    others')."""
    import asyncio

    plans = {**COUNTER_PLANS, "turn": [tool_call("turn"), "Turned."]}
    judge = PlanJudge()
    trainer = PolyEPOTrainer(
        model=str(model_dir),
        reward_funcs=dial_reward,
        args=config(tmp_path, shuffle_dataset=False, per_device_train_batch_size=16),
        train_dataset=counter_rows(environment=["counter", "dial", "counter", "dial"]),
        environment_factory={"counter": owner, "counter_again": owner, "dial": Dial},
        judge=judge,
    )
    assert trainer.reward_func_names == ["dial_reward", owner.__name__]  # one column for the class named twice
    with patch.object(
        trainer.model, "generate", side_effect=scripted_generate(trainer.processing_class, plan_script(plans))
    ):
        trainer.train()
    assert trainer.state.global_step == 2
    logged = [h for h in trainer.state.log_history if f"rewards/{owner.__name__}/mean" in h]
    assert logged and all(h["rewards/dial_reward/mean"] == h["rewards/dial_reward/mean"] for h in logged)
    batch = trainer.last_set_batch
    assert not batch.rewards.isnan().any()  # every rollout was scored by its own environment's source
    check_set_advantages(trainer)

    scored, unscored = owner(), Dial()
    scored.reset(target=4)
    scored.add(4)
    unscored.reset()
    owned = trainer.reward_funcs[-1]
    call = owned(environments=[scored, unscored, scored])
    assert (asyncio.run(call) if asyncio.iscoroutine(call) else call) == [1.0, None, 1.0]
    with pytest.raises(ValueError, match="returned 2 rewards for 3 completions"):
        wrong = trainer.reward_funcs[0]
        wrong(completions=["a", "b", "c"], environments=[unscored, unscored])


@pytest.mark.parametrize("trainer_cls", TRAINERS)
def test_several_environments_chosen_per_row(trainer_cls, model_dir, tmp_path):
    class Echo:
        def reset(self, **kwargs) -> str:
            return "Shout it."

        def shout(self, text: str) -> str:
            """
            Shout the text.

            Args:
                text: The text to shout.

            Returns:
                The text in capitals.
            """
            return text.upper()

    plans = {
        **COUNTER_PLANS,
        "shout": [tool_call("shout", text="hi"), "HI"],
    }
    judge = PlanJudge()
    trainer = trainer_cls(
        model=str(model_dir),
        reward_funcs=lambda completions, **kw: [
            float(final_text(c).startswith(("It is 4", "HI"))) for c in completions
        ],
        args=config(tmp_path, shuffle_dataset=False, per_device_train_batch_size=16),
        train_dataset=counter_rows(environment=["counter", "echo", "counter", "echo"]),
        environment_factory={"counter": Counter, "echo": Echo},
        judge=judge,
    )
    script = plan_script(plans)
    with patch.object(trainer.model, "generate", side_effect=scripted_generate(trainer.processing_class, script)):
        trainer.train()
    results = {m["content"] for g in judge.groups for c in g for m in c if m["role"] == "tool"}
    assert "HI" in results  # the echo environment's tool ran on echo rows
    check_set_advantages(trainer)


@pytest.mark.parametrize("trainer_cls", TRAINERS)
def test_an_environment_owning_its_data(trainer_cls, model_dir, tmp_path):
    class OwnsData(Counter):
        def reset(self, **kwargs) -> str:
            super().reset(target=4)
            return "Make the counter reach 4."

    judge = PlanJudge()
    trainer = trainer_cls(model=str(model_dir), args=config(tmp_path), environment_factory=OwnsData, judge=judge)
    train(trainer)
    assert trainer.state.global_step == 2
    check_set_advantages(trainer)


@pytest.mark.parametrize("trainer_cls", TRAINERS)
def test_a_rollout_function(trainer_cls, model_dir, tmp_path):
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    answers = ["It is 4.", "It is 5.", "4", "four"]

    def rollout(prompts: list, trainer) -> dict:
        rows = {"prompt_ids": [], "completion_ids": [], "logprobs": [], "answer_index": []}
        for k, prompt in enumerate(prompts):
            ids = tokenizer.apply_chat_template(prompt, add_generation_prompt=True, tokenize=True, return_dict=False)
            completion = tokenizer(answers[k % 4] + "<|im_end|>", add_special_tokens=False)["input_ids"]
            rows["prompt_ids"].append(ids)
            rows["completion_ids"].append(completion)
            rows["logprobs"].append([-1.0] * len(completion))
            rows["answer_index"].append(k % 4)
        return rows

    def extra_field_seen(completions, answer_index, **kwargs) -> list[float]:
        return [float(i == 0) for i in answer_index]  # rollout_func's extra field reaches reward functions

    judge = PlanJudge()
    trainer = trainer_cls(
        model=str(model_dir),
        reward_funcs=extra_field_seen,
        args=config(tmp_path),
        train_dataset=counter_rows(),
        rollout_func=rollout,
        judge=judge,
    )
    trainer.train()
    assert [final_text(c) for c in judge.groups[0]] == answers * 2
    assert trainer.last_set_batch.rewards[0].tolist() == [1.0, 0.0, 0.0, 0.0] * 2
    check_set_advantages(trainer)


class PlanOfTurnsJudge(ClusteringJudge):
    """Reads the default view, as a language-model judge does: a trajectory's plan is its ``calls`` lines in order;
    a completion with no turns to read (flat text) is degenerate, as the agent template tells an LM judge."""

    async def acluster(self, prompt: str, completions: list[str]) -> list[int]:
        plans: dict[tuple, int] = {}
        ids = []
        for text in completions:
            turns = trajectory_turns(text)
            calls = tuple(line for _, body in turns for line in body.splitlines() if line.startswith("calls "))
            ids.append(plans.setdefault(calls, len(plans)) if turns else 100)
        return ids


EPISODES = [  # (calls, final words): two reach 4, two do not
    ([("add", {"n": 4})], "It is 4."),
    ([("double", {})], "It is 0."),
    ([("add", {"n": 2}), ("add", {"n": 2})], "It is 4."),
    ([], "It is 4."),
]


def counter_rollout(tokenizer, gives: str):
    """A real rollout function: each episode's calls run on a real Counter, the conversation is rendered with the
    model's chat template (TRL's multi-turn template where the model's own is not prefix-preserving), and the
    completion is everything after the prompt. Besides what GRPOTrainer needs, it gives ``gives``: "trajectory" (the
    messages), "env_mask" (1 on the model's tokens, 0 on the environment's, as GRPOTrainer takes it) or "nothing"."""
    from trl.chat_template_utils import get_training_chat_template, is_chat_template_prefix_preserving

    template = None if is_chat_template_prefix_preserving(tokenizer) else get_training_chat_template(tokenizer)

    def render(messages: list, generation_prompt: bool) -> list[int]:
        return tokenizer.apply_chat_template(
            messages, add_generation_prompt=generation_prompt, return_dict=False, chat_template=template
        )

    def rollout(prompts: list, trainer) -> dict:
        out = {"prompt_ids": [], "completion_ids": [], "logprobs": [], "reached": []}
        if gives != "nothing":
            out[gives] = []
        for k, prompt in enumerate(prompts):
            calls, words = EPISODES[k % len(EPISODES)]
            counter, messages = Counter(), []
            counter.reset(target=4)
            for name, arguments in calls:
                call = {"type": "function", "function": {"name": name, "arguments": arguments}}
                messages.append({"role": "assistant", "content": "", "tool_calls": [call]})
                messages.append({"role": "tool", "name": name, "content": str(getattr(counter, name)(**arguments))})
            messages.append({"role": "assistant", "content": words})
            prompt_ids = render(prompt, True)
            completion, mask, before = [], [], prompt_ids
            for i, message in enumerate(messages):  # each turn's tokens: the model's (1) or the environment's (0)
                now = render(prompt + messages[: i + 1], message["role"] == "tool")
                completion += now[len(before) :]
                mask += [int(message["role"] == "assistant")] * (len(now) - len(before))
                before = now
            out["prompt_ids"].append(prompt_ids)
            out["completion_ids"].append(completion)
            out["logprobs"].append([-1.0] * len(completion))
            out["reached"].append(float(counter.value == 4))
            if gives != "nothing":
                out[gives].append(messages if gives == "trajectory" else mask)
        return out

    return rollout


def reached(completions, reached, **kwargs) -> list[float]:
    return reached


def test_a_rollout_functions_episodes_reach_the_judge_as_turns(model_dir, tmp_path, caplog):
    """Its ``trajectory`` field, or, as a rollout_func written for GRPOTrainer gives them, its token ids and
    ``env_mask``: either way the judge reads each episode turn by turn (roles, calls, results) and a rewarded episode
    gets a positive set advantage. With neither, TRL's flat text: every rollout degenerate, and said so."""
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    runs = {}
    for gives in ("trajectory", "env_mask", "nothing"):
        judge = RecordingPlans()
        trainer = PolyEPOTrainer(
            model=str(model_dir),
            reward_funcs=reached,
            args=config(tmp_path / gives, max_steps=1),
            train_dataset=counter_rows(),
            rollout_func=counter_rollout(tokenizer, gives),
            judge=judge,
        )
        caplog.clear()
        with caplog.at_level("WARNING"):
            trainer.train()
        runs[gives] = (judge, trainer.last_set_batch, caplog.text)
    for gives in ("trajectory", "env_mask"):
        judge, batch, said = runs[gives]
        assert batch.rewards[0].tolist() == [1.0, 0.0, 1.0, 0.0] * 2, gives
        ((_, texts),) = judge.seen
        turns = trajectory_turns(texts[0])
        assert [role for role, _ in turns] == ["assistant", "tool_result", "assistant"], gives
        assert turns[0][1] == 'calls add({"n": 4})' and turns[1][1] == "(result of add, from the environment)\n4"
        assert trajectory_turns(texts[3]) == [("assistant", "(final answer, no tool call)\nIt is 4.")], gives
        assert [role for role, _ in trajectory_turns(texts[2])] == ["assistant", "tool_result"] * 2 + ["assistant"]
        assert batch.cluster_ids[0].tolist() == [0, 1, 2, 3] * 2, gives
        assert (batch.advantages[0][batch.rewards[0] == 1] > 0).all(), gives  # a rewarded episode moves the policy
        assert "rollout_func returned neither" not in said
    assert runs["trajectory"][0].seen == runs["env_mask"][0].seen  # the turns rebuilt are the turns given
    flat_judge, flat, said = runs["nothing"]
    assert trajectory_turns(flat_judge.seen[0][1][0]) == [] and (flat.cluster_ids == 100).all()
    assert (flat.advantages == 0).all()
    assert "rollout_func returned neither a 'trajectory' field nor an env_mask" in said


class RecordingPlans(PlanOfTurnsJudge):
    def __init__(self) -> None:
        super().__init__()
        self.seen: list[tuple[str, list[str]]] = []

    async def acluster(self, prompt: str, completions: list[str]) -> list[int]:
        self.seen.append((prompt, completions))
        return await super().acluster(prompt, completions)


def test_a_rollout_functions_trajectory_field_of_the_wrong_shape_is_refused(model_dir, tmp_path):
    def rollout(prompts: list, trainer) -> dict:
        out = counter_rollout(AutoTokenizer.from_pretrained(model_dir), "trajectory")(prompts, trainer)
        out["trajectory"] = ["flat text"] * len(prompts)
        return out

    trainer = PolyEPOTrainer(
        model=str(model_dir), reward_funcs=reached, args=config(tmp_path, max_steps=1),
        train_dataset=counter_rows(), rollout_func=rollout, judge=PlanOfTurnsJudge(),
    )  # fmt: skip
    with pytest.raises(ValueError, match="'trajectory' field: expected one list of chat messages"):
        trainer.train()


@pytest.mark.parametrize("trainer_cls", TRAINERS)
def test_a_tool_returning_an_image_to_a_vision_language_model(trainer_cls, tmp_path):
    model_dir = tmp_path / "vlm"
    processor = save_vision_tool_model(model_dir)
    judge = PlanJudge()
    prompt = [{"role": "user", "content": [{"type": "text", "text": "Which colour?"}]}]
    rows = Dataset.from_dict({"prompt": [prompt] * 4, "colour": ["red"] * 4})
    trainer = trainer_cls(
        model=str(model_dir),
        processing_class=processor,
        args=config(tmp_path),
        train_dataset=rows,
        environment_factory=Easel,
        judge=judge,
    )
    image_token = processor.tokenizer.convert_tokens_to_ids("<|image_pad|>")
    seen = []  # (image tokens in the batch, pixel rows) of each forward pass that got pixels

    def record(module, args, kwargs) -> None:
        if kwargs.get("pixel_values") is not None:
            seen.append((int((kwargs["input_ids"] == image_token).sum()), kwargs["pixel_values"].shape[0]))

    trainer.model.register_forward_pre_hook(record, with_kwargs=True)
    script = plan_script(EASEL_PLANS)
    with patch.object(trainer.model, "generate", side_effect=scripted_generate(processor.tokenizer, script)):
        trainer.train()
    looked = [c for group in judge.groups for c in group if c[0].get("tool_calls")]
    assert looked and len(looked) < 2 * 8, "every rollout or none looked: the plans were not mixed"
    for c in looked:
        # the image crossed processes as a placeholder, its caption as text, between the call and the answer
        assert roles(c) == ["assistant", "tool", "assistant"]
        assert c[1]["content"] == [{"type": "image"}, {"type": "text", "text": "the picture"}]
        assert c[-1]["content"] == "It is red."
    # each step's loss forward pass saw that step's pictures: one image token per look (4 merged 16-pixel patches)
    looks = [sum(bool(c[0].get("tool_calls")) for c in group) for group in judge.groups]
    assert seen == [(n, 4 * n) for n in looks]
    batch = trainer.last_set_batch
    last = judge.groups[-1]
    assert batch.rewards.flatten().tolist()[: len(last)] == [float(bool(c[0].get("tool_calls"))) for c in last]
    check_set_advantages(trainer)


def test_without_tool_calls_the_advantages_are_those_of_a_plain_group(model_dir, tmp_path):
    """Tools offered but never called: same judge input, rewards, ids and advantages as a run without tools."""
    plans = {"four": ["It is 4."], "five": ["It is 5."], "none": ["I cannot."]}

    def answered_four(completions, **kwargs) -> list[float]:
        return [float(final_text(c) == "It is 4.") for c in completions]

    batches = []
    for tools in ([Counter().double], []):
        judge = PlanJudge()
        trainer = PolyEPOTrainer(
            model=str(model_dir),
            reward_funcs=answered_four,
            args=config(tmp_path / str(len(tools)), max_steps=1),
            train_dataset=counter_rows(),
            tools=tools,
            judge=judge,
        )
        script = plan_script(plans)
        with patch.object(trainer.model, "generate", side_effect=scripted_generate(trainer.processing_class, script)):
            trainer.train()
        batches.append((judge.groups, trainer.last_set_batch))
    (groups_tools, with_tools), (groups_plain, plain) = batches
    assert groups_tools == groups_plain
    assert with_tools.completions == plain.completions
    for name in ("rewards", "cluster_ids", "advantages"):
        torch.testing.assert_close(getattr(with_tools, name), getattr(plain, name))
    assert plain.advantages.abs().sum() > 0


class RecordingJudge(ClusteringJudge):
    """A judge with the default view (what language-model judges read): records it, one cluster per text."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[tuple[str, list[str]]] = []

    async def acluster(self, prompt: str, completions: list[str]) -> list[int]:
        self.seen.append((prompt, completions))
        ids: dict[str, int] = {}
        return [ids.setdefault(c, len(ids)) for c in completions]


def test_the_judge_reads_each_trajectory_turn_by_turn_with_roles_calls_and_results(model_dir, tmp_path):
    judge = RecordingJudge()
    trainer = PolyEPOTrainer(
        model=str(model_dir),
        args=config(tmp_path, max_steps=1),
        train_dataset=counter_rows(),
        environment_factory=Counter,
        judge=judge,
    )
    train(trainer)
    ((problem, texts),) = judge.seen
    assert problem == "Make the counter reach 4."
    by_plan = {}
    for text in texts:
        turns = trajectory_turns(text)
        by_plan.setdefault(tuple(role for role, _ in turns), turns)
    turns = by_plan[("assistant", "tool_result", "assistant", "tool_result", "assistant")]
    first, second = turns[0][1], turns[2][1]
    assert {first, second} in (
        {'calls add({"n": 2})', "calls double({})"},
        {"calls double({})", 'calls add({"n": 4})'},
    )
    assert re.fullmatch(r"\(result of (add|double), from the environment\)\n\d+", turns[1][1])
    assert turns[-1] == ("assistant", "(final answer, no tool call)\nIt is 4.")
    # a language-model judge built by the trainer is told what the agent could call, as the policy's chat template is
    told = PolyEPOTrainer(
        model=str(model_dir),
        args=config(tmp_path / "told", judge="openai:http://127.0.0.1:9/v1/judge", judge_template="agent"),
        train_dataset=counter_rows(),
        environment_factory=Counter,
        check_judge=False,  # no server: only the judge's prompt is read
    ).judge.tools
    assert told.splitlines() == [
        "- add(n: integer): Add n to the counter. (n: The number to add)",
        "- double(): Double the counter.",
    ]
    assert "Tools the agent could call:\n- add(n: integer)" in JudgeTemplate.load("agent").render(
        problem, texts, tools=told
    )
    # and the agent judge's prompt holds each trajectory whole, in its own block
    prompt = JudgeTemplate.load("agent").render(problem, texts)
    assert response_blocks(prompt) == [t.strip() for t in texts]
