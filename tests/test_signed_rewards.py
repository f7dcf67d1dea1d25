"""Rewards below 0 (format and length penalties) never turn the set objective's diversity into a penalty: methods
that multiply rewards read them from the run's reward floor (``methods.floor``)."""

import logging
import re

import pytest
import torch
from tiny import save_tiny_model, small_settings, toy_dataset
from transformers import AutoTokenizer
from trl import GRPOConfig

from poly_epo_trl import PolyEPOTrainer, marginal_set_advantages
from poly_epo_trl.methods import METHODS, SetBatch, apply_method, resolve_settings
from poly_epo_trl.methods.floor import RewardFloor

DEGENERATE = 100


def batch_of(rewards, clusters, floor=0.0) -> SetBatch:
    r = torch.as_tensor(rewards, dtype=torch.float64)
    c = torch.as_tensor(clusters, dtype=torch.long)
    size = r.numel()
    return SetBatch(
        r, c, torch.full_like(r, torch.nan), "train", ["q"] * size, ["a"] * size, ["a"] * size,
        [None] * r.shape[0], reward_floor=floor,
    )  # fmt: skip


def poly_epo(batch: SetBatch) -> torch.Tensor:
    method = METHODS.get("poly_epo")
    return apply_method(method, batch, resolve_settings(method, {}, batch.group_size).settings, "none").advantages


def test_the_course_exercises_length_reward_favours_the_completion_with_the_best_reward():
    """The course's reward, -abs(50 - len(completion)): the only completion with a strategy had the best reward (-22
    against -50 for the empty ones). On the raw rewards the set objective gives it the most negative advantage;
    read from the floor (the lowest reward, -50) it gets the highest."""
    rewards = [[-22.0] + [-50.0] * 7]
    clusters = [[0] + [DEGENERATE] * 7]
    raw = marginal_set_advantages(torch.tensor(rewards), torch.tensor(clusters), 4)[0]
    assert raw[0] == raw.min() < 0  # the inversion the floor prevents
    floor = RewardFloor()
    assert floor.update(torch.tensor(rewards)) == -50.0 and floor.value == -50.0
    advantages = poly_epo(batch_of(rewards, clusters, floor.value))[0]
    assert advantages[0] == advantages.max() > 0
    assert torch.all(advantages[1:] < 0)


def test_rewards_shifted_down_give_the_same_advantages_when_the_floor_follows_them():
    """The same groups with rewards r in [0, 1] and r - 10: the floor the run derives (the lowest reward seen, -10
    where a reward is 0) or declares (-10) gives exactly the advantages of r; rewards >= 0 are read as they are."""
    generator = torch.Generator().manual_seed(0)
    rewards = torch.rand(6, 8, generator=generator, dtype=torch.float64)
    rewards[0, 3] = 0.0
    clusters = torch.randint(0, 4, (6, 8), generator=generator)
    clusters[clusters == 3] = DEGENERATE
    base = poly_epo(batch_of(rewards, clusters))
    derived = RewardFloor()
    derived.update(rewards - 10)
    assert derived.value == -10.0
    for floor in (derived.value, -10.0):
        torch.testing.assert_close(poly_epo(batch_of(rewards - 10, clusters, floor)), base)
    orders = poly_epo(batch_of(rewards - 10, clusters, derived.value)).argsort(1)
    assert torch.equal(orders, base.argsort(1))
    untouched = RewardFloor()
    assert untouched.update(rewards) is None and untouched.value == 0.0  # the paper's objective exactly


def test_the_floor_only_moves_down_and_round_trips_through_a_checkpoint():
    floor = RewardFloor(-2.0)
    assert floor.update(torch.tensor([[0.0, -1.0]])) is None and floor.value == -2.0
    assert floor.update(torch.tensor([[float("nan"), -7.5]])) == -7.5
    assert floor.update(torch.tensor([[-3.0]])) is None and floor.value == -7.5 and floor.moved
    resumed = RewardFloor(-2.0)
    resumed.load_state_dict(floor.state_dict())
    assert resumed.value == -7.5


def length_reward(completions, **kwargs):
    """The course exercise's reward: completions near 50 characters."""
    return [-abs(50 - len(completion)) for completion in completions]


def format_reward(completions, **kwargs):
    """A format reward that penalises a completion without a digit (its 'tag') by -2, and gives 1 otherwise."""
    return [1.0 if re.search(r"\d", completion) else -2.0 for completion in completions]


class Recording(PolyEPOTrainer):
    def _calculate_rewards(self, *args, **kwargs):
        rewards = super()._calculate_rewards(*args, **kwargs)
        self.batches = [*getattr(self, "batches", []), self.step.batch]
        return rewards


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return save_tiny_model(tmp_path_factory.mktemp("tiny"))


@pytest.mark.parametrize("reward", [length_reward, format_reward])
def test_signed_rewards_train_through_the_swap_favouring_the_better_completions(model_dir, tmp_path, reward, caplog):
    """A plain GRPOConfig (the one-import swap) with a reward below 0: the run says the floor at start-up and when a
    reward lowers it, and in every group a completion with a reward at least another's, and a strategy where the
    other has none (or the same strategy), gets an advantage at least the other's."""
    settings = small_settings(tmp_path, max_completion_length=6, learning_rate=1e-3)
    args = GRPOConfig(**{key: value for key, value in settings.items() if key != "set_size"})
    with caplog.at_level(logging.INFO):
        trainer = Recording(
            model=str(model_dir),
            reward_funcs=reward,
            args=args,
            train_dataset=toy_dataset(),
            processing_class=AutoTokenizer.from_pretrained(model_dir),
            judge="answer",
        )
        trainer.train()
    assert "reads them from the reward floor 0" in trainer.start_line
    assert "Rewards below the reward floor" in caplog.text
    floors = [row["rewards/floor"] for row in trainer.state.log_history if "rewards/floor" in row]
    lowest = min(batch.rewards.min().item() for batch in trainer.batches)
    assert floors and min(floors) == pytest.approx(lowest) and lowest < 0
    compared = 0
    for batch in trainer.batches:
        r, c, a = batch.rewards, batch.cluster_ids, batch.advantages
        for g in range(r.shape[0]):
            for i in range(r.shape[1]):
                for j in range(r.shape[1]):
                    no_less_diverse = c[g, j] == DEGENERATE or c[g, i] == c[g, j]
                    if r[g, i] > r[g, j] and no_less_diverse:
                        compared += 1
                        assert a[g, i] >= a[g, j] - 1e-9, (r[g].tolist(), c[g].tolist(), a[g].tolist())
    assert compared > 0
