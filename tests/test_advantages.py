import math

import pytest
import torch
from brute_force import brute_force_advantages
from hypothesis import given, settings
from hypothesis import strategies as st

from poly_epo_trl.advantages import (
    compare_advantages,
    distinct_clusters,
    diversity_bonus,
    group_relative_advantages,
    marginal_set_advantages,
    scale_advantages,
)

OBJECTIVE_GATES = [("polychromic", False), ("polychromic", True), ("pass_at_n", False), ("mean", False)]


@st.composite
def groups(draw, max_n=10, allow_nan=True):
    size = draw(st.integers(1, max_n))
    reward = st.one_of(st.sampled_from([0.0, 1.0]), st.floats(-3, 3, allow_nan=False, allow_infinity=False))
    if allow_nan:
        reward = st.one_of(reward, st.just(math.nan))
    rewards = draw(st.lists(reward, min_size=size, max_size=size))
    clusters = draw(st.lists(st.sampled_from([0, 1, 2, 3, 5, 100]), min_size=size, max_size=size))
    set_size = draw(st.integers(1, size))
    return rewards, clusters, set_size


def advantages(rewards, clusters, n, **kwargs):
    return marginal_set_advantages(
        torch.tensor([rewards], dtype=torch.float64), torch.tensor([clusters]), n, **kwargs
    )[0]


@settings(max_examples=300, deadline=None)
@given(groups(), st.sampled_from(OBJECTIVE_GATES), st.sampled_from(["mean", "sum"]))
def test_closed_form_and_enumeration_match_brute_force(group, objective_gate, reduction):
    rewards, clusters, n = group
    objective, gate = objective_gate
    expected = torch.tensor(
        brute_force_advantages(rewards, clusters, n, objective, gate, reduction), dtype=torch.float64
    )
    for estimator in ("closed_form", "enumerate"):
        got = advantages(
            rewards, clusters, n, objective=objective, gate=gate, reduction=reduction, estimator=estimator
        )
        torch.testing.assert_close(got, expected.to(got.dtype), atol=1e-9, rtol=0)


@settings(max_examples=100, deadline=None)
@given(groups(allow_nan=False), st.sampled_from(OBJECTIVE_GATES))
def test_advantages_sum_to_zero_per_group(group, objective_gate):
    rewards, clusters, n = group
    objective, gate = objective_gate
    got = advantages(rewards, clusters, n, objective=objective, gate=gate)
    assert abs(got.sum().item()) < 1e-9


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(-2, 2), min_size=2, max_size=10), st.data())
def test_set_size_one_is_reward_minus_mean(rewards, data):
    clusters = data.draw(st.lists(st.integers(0, 3), min_size=len(rewards), max_size=len(rewards)))
    got = advantages(rewards, clusters, 1, objective="polychromic")
    r = torch.tensor(rewards, dtype=torch.float64)
    # n = 1: f({i}) = r_i * 1[c_i non-degenerate]; all clusters here are non-degenerate.
    torch.testing.assert_close(got, r - r.mean(), atol=1e-12, rtol=0)


@settings(max_examples=50, deadline=None)
@given(groups(allow_nan=False), st.sampled_from(OBJECTIVE_GATES))
def test_set_size_equal_to_group_gives_zero(group, objective_gate):
    rewards, clusters, _ = group
    objective, gate = objective_gate
    got = advantages(rewards, clusters, len(rewards), objective=objective, gate=gate)
    assert got.abs().max().item() < 1e-12


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(-2, 2), min_size=2, max_size=10), st.data())
def test_single_cluster_closed_form(rewards, data):
    big_n = len(rewards)
    n = data.draw(st.integers(1, big_n))
    got = advantages(rewards, [4] * big_n, n, objective="polychromic")
    r = torch.tensor(rewards, dtype=torch.float64)
    expected = (r - r.mean()) * (big_n - n) / (n**2 * (big_n - 1))
    torch.testing.assert_close(got, expected, atol=1e-12, rtol=0)


@settings(max_examples=60, deadline=None)
@given(groups(allow_nan=True), st.sampled_from(OBJECTIVE_GATES), st.randoms(use_true_random=False))
def test_permutation_equivariance(group, objective_gate, rnd):
    rewards, clusters, n = group
    objective, gate = objective_gate
    perm = list(range(len(rewards)))
    rnd.shuffle(perm)
    base = advantages(rewards, clusters, n, objective=objective, gate=gate)
    permuted = advantages([rewards[p] for p in perm], [clusters[p] for p in perm], n, objective=objective, gate=gate)
    torch.testing.assert_close(permuted, base[perm], atol=1e-12, rtol=0)


@settings(max_examples=60, deadline=None)
@given(groups(allow_nan=True), st.sampled_from(OBJECTIVE_GATES))
def test_relabelling_clusters_changes_nothing(group, objective_gate):
    rewards, clusters, n = group
    objective, gate = objective_gate
    relabel = {0: 17, 1: -3, 2: 0, 3: 42, 5: 1, 100: 100}
    base = advantages(rewards, clusters, n, objective=objective, gate=gate)
    moved = advantages(rewards, [relabel[c] for c in clusters], n, objective=objective, gate=gate)
    torch.testing.assert_close(moved, base, atol=1e-12, rtol=0)


def test_nan_rewards_get_zero_and_leave_the_sets():
    rewards = [1.0, math.nan, 0.0, 1.0, math.nan]
    clusters = [0, 1, 2, 0, 3]
    got = advantages(rewards, clusters, 2)
    assert got[1] == 0 and got[4] == 0
    compact = advantages([1.0, 0.0, 1.0], [0, 2, 0], 2)
    torch.testing.assert_close(got[[0, 2, 3]], compact)


def test_group_with_too_few_scorable_rollouts_gets_zeros():
    got = advantages([1.0, math.nan, math.nan, 0.5], [0, 1, 2, 3], 3)
    assert torch.count_nonzero(got) == 0


def test_batch_of_groups_is_each_group_alone():
    gen = torch.Generator().manual_seed(0)
    rewards = torch.rand(6, 8, generator=gen, dtype=torch.float64)
    rewards[2, 3] = math.nan
    rewards[4, :6] = math.nan
    clusters = torch.randint(0, 4, (6, 8), generator=gen)
    clusters[1, 2] = 100
    batch = marginal_set_advantages(rewards, clusters, 4)
    for g in range(6):
        alone = marginal_set_advantages(rewards[g : g + 1], clusters[g : g + 1], 4)
        torch.testing.assert_close(batch[g : g + 1], alone)


def test_sampled_estimator_converges_to_exact():
    gen = torch.Generator().manual_seed(1)
    rewards = (torch.rand(4, 8, generator=gen) > 0.4).double()
    clusters = torch.randint(0, 3, (4, 8), generator=gen)
    exact = marginal_set_advantages(rewards, clusters, 4)
    errors = []
    for num_sets in (64, 1024, 16384):
        sampled = marginal_set_advantages(
            rewards, clusters, 4, estimator="sample", num_sampled_sets=num_sets, generator=gen
        )
        assert abs(sampled.sum(1)).max() < 1e-9
        errors.append((sampled - exact).abs().mean().item())
    assert errors[-1] < errors[0] / 4
    assert errors[-1] < 5e-3


def test_sampled_estimator_is_unbiased():
    gen = torch.Generator().manual_seed(2)
    rewards = torch.tensor([[1.0, 0.0, 1.0, 1.0, 0.0, 1.0]], dtype=torch.float64)
    clusters = torch.tensor([[0, 1, 0, 2, 100, 3]])
    exact = marginal_set_advantages(rewards, clusters, 3)
    runs = torch.stack(
        [
            marginal_set_advantages(rewards, clusters, 3, estimator="sample", num_sampled_sets=8, generator=gen)
            for _ in range(4000)
        ]
    )
    stderr = runs.std(0) / math.sqrt(runs.shape[0])
    assert ((runs.mean(0) - exact).abs() < 4 * stderr + 1e-12).all()


def test_custom_objective_is_enumerated_and_auto_falls_back_to_sampling():
    def best_two_distinct(r, c):
        return r.amax(-1) * (c[..., :1] != c[..., 1:]).any(-1)

    rewards = torch.tensor([[1.0, 0.0, 1.0, 0.5, 1.0]], dtype=torch.float64)
    clusters = torch.tensor([[0, 0, 1, 2, 0]])
    got = marginal_set_advantages(rewards, clusters, 2, objective=best_two_distinct)
    brute = torch.zeros(5, dtype=torch.float64)
    sets = [(i, j) for i in range(5) for j in range(i + 1, 5)]
    values = {s: best_two_distinct(rewards[0, list(s)], clusters[0, list(s)]).item() for s in sets}
    mean = sum(values.values()) / len(sets)
    for i in range(5):
        brute[i] = sum(v - mean for s, v in values.items() if i in s) / 4
    torch.testing.assert_close(got[0], brute)
    gen = torch.Generator().manual_seed(0)
    sampled = marginal_set_advantages(
        rewards, clusters, 2, objective=best_two_distinct, max_enumerated_sets=5, num_sampled_sets=20000, generator=gen
    )
    torch.testing.assert_close(sampled, got, atol=0.02, rtol=0)


def test_pass_at_n_and_mean_match_known_forms():
    r = torch.tensor([[1.0, 0.0, 0.0, 0.0]], dtype=torch.float64)
    c = torch.zeros(1, 4, dtype=torch.long)
    # pass@2 with one correct rollout: E[max | i] = 1 for i = 0, 1/3 for the others; baseline 1/2.
    got = marginal_set_advantages(r, c, 2, objective="pass_at_n")
    torch.testing.assert_close(got[0], torch.tensor([0.5, -1 / 6, -1 / 6, -1 / 6], dtype=torch.float64))
    got = marginal_set_advantages(r, c, 2, objective="mean", reduction="sum")
    torch.testing.assert_close(got[0], 3 * (r[0] - 0.25) * 2 / (2 * 3))


def test_a_registered_objective_is_named_by_its_name():
    """The registry is the one place objectives are looked up: marginal_set_advantages takes a registered name (and a
    ``package.module:function`` path) as the trainer's set_objective does."""
    from poly_epo_trl.advantages import OBJECTIVES

    def distinct_rewarded(rewards, cluster_ids):
        return (rewards.amax(-1) > 0) * distinct_clusters(cluster_ids).to(rewards.dtype) / rewards.shape[-1]

    OBJECTIVES.register("distinct_rewarded_test")(distinct_rewarded)
    rewards = torch.tensor([[1.0, 0.0, 1.0, 1.0, 0.0, 1.0]], dtype=torch.float64)
    clusters = torch.tensor([[0, 1, 0, 2, 100, 3]])
    by_name = marginal_set_advantages(rewards, clusters, 3, objective="distinct_rewarded_test")
    torch.testing.assert_close(by_name, marginal_set_advantages(rewards, clusters, 3, objective=distinct_rewarded))
    assert by_name.abs().sum() > 0


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"set_size": 9}, "set_size"),
        ({"set_size": 0}, "set_size"),
        ({"objective": "max"}, "Unknown set_objective 'max'"),
        ({"reduction": "median"}, "reduction"),
        ({"estimator": "exact"}, "estimator"),
        ({"objective": "mean", "gate": True}, "gate"),
        ({"objective": lambda r, c: r.sum(-1), "estimator": "closed_form"}, "closed_form"),
        ({"estimator": "enumerate", "max_enumerated_sets": 10}, "max_enumerated_sets"),
        ({"estimator": "sample", "num_sampled_sets": 0}, "num_sampled_sets"),
    ],
)
def test_bad_arguments_say_what_to_change(kwargs, message):
    rewards = torch.ones(2, 8)
    clusters = torch.zeros(2, 8, dtype=torch.long)
    args = {"set_size": 4, **kwargs}
    with pytest.raises(ValueError, match=message):
        marginal_set_advantages(rewards, clusters, **args)


def test_shape_and_dtype_errors():
    with pytest.raises(ValueError, match="one cluster id per rollout"):
        marginal_set_advantages(torch.ones(2, 8), torch.zeros(2, 7, dtype=torch.long), 4)
    with pytest.raises(TypeError, match="integer"):
        marginal_set_advantages(torch.ones(2, 8), torch.zeros(2, 8), 4)
    with pytest.raises(ValueError, match="groups, rollouts"):
        marginal_set_advantages(torch.ones(8), torch.zeros(8, dtype=torch.long), 4)


def test_float32_in_float32_out():
    got = marginal_set_advantages(torch.rand(3, 8), torch.randint(0, 3, (3, 8)), 4)
    assert got.dtype == torch.float32


def test_dr_grpo_and_diversity_bonus():
    rewards = torch.tensor([[1.0, 0.0, math.nan, 1.0]])
    torch.testing.assert_close(group_relative_advantages(rewards), torch.tensor([[1 / 3, -2 / 3, 0.0, 1 / 3]]))
    clusters = torch.tensor([[0, 0, 1, 100]])
    bonus = diversity_bonus(clusters, 0.5)
    torch.testing.assert_close(
        bonus[0], torch.tensor([0.5 * (4 / 2 - 1) / 3, 0.5 * (4 / 2 - 1) / 3, 0.5, 0.0]).double()
    )


def test_return_baseline_is_the_mean_set_value():
    rewards = torch.tensor([[1.0, 0.0, 1.0, 1.0, 0.0], [1.0, math.nan, math.nan, math.nan, 0.0]], dtype=torch.float64)
    clusters = torch.tensor([[0, 1, 2, 0, 100], [0, 1, 2, 3, 4]])
    adv, baseline = marginal_set_advantages(rewards, clusters, 3, return_baseline=True)
    torch.testing.assert_close(adv, marginal_set_advantages(rewards, clusters, 3))
    from itertools import combinations

    from brute_force import set_value

    sets = list(combinations(range(5), 3))
    values = [set_value(rewards[0, list(s)].tolist(), clusters[0, list(s)].tolist(), "polychromic") for s in sets]
    assert abs(baseline[0].item() - sum(values) / len(values)) < 1e-12
    assert math.isnan(baseline[1].item())


def test_compare_advantages_relations():
    rewards, clusters = [1, 1, 1, 0, 1, 0, 0, 1], [0, 0, 1, 2, 3, 100, 2, 0]
    table = compare_advantages(rewards, clusters, set_size=4, diversity_coef=0.5)
    grpo = torch.tensor(table["GRPO"])
    assert torch.allclose(torch.tensor(table["mean reward"]), grpo * (8 - 4) / (4 * 7), atol=1e-12)
    assert torch.allclose(torch.tensor(table["Poly-EPO (sum)"]), torch.tensor(table["Poly-EPO"]) * math.comb(7, 3))
    distinct = compare_advantages(rewards, list(range(8)), set_size=4, diversity_coef=0.5)
    assert distinct["GRPO+DIV"] == pytest.approx(distinct["GRPO"])  # an equal bonus for all cancels out


def reference_scaled(values, scored, eps=1e-4):
    """A / (stdev + eps) over the scored entries, with the standard library's unbiased stdev (0 for fewer than 2)."""
    import statistics

    kept = [v for v, s in zip(values, scored, strict=True) if s]
    std = statistics.stdev(kept) if len(kept) > 1 else 0.0
    return [v / (std + eps) if s else 0.0 for v, s in zip(values, scored, strict=True)]


@settings(max_examples=200, deadline=None)
@given(groups(), st.sampled_from(OBJECTIVE_GATES), st.sampled_from(["mean", "sum"]))
def test_group_scaling_commutes_with_the_closed_form(group, objective_gate, reduction):
    """Closed form, then scale by the group's std == brute force, then the same scaling computed independently."""
    rewards, clusters, n = group
    objective, gate = objective_gate
    scored = [not math.isnan(r) for r in rewards]
    exact = brute_force_advantages(rewards, clusters, n, objective, gate, reduction)
    expected = torch.tensor(reference_scaled(exact, scored), dtype=torch.float64)
    got = advantages(rewards, clusters, n, objective=objective, gate=gate, reduction=reduction)
    scaled = scale_advantages(got.unsqueeze(0), "group", torch.tensor([scored]))[0]
    torch.testing.assert_close(scaled, expected, atol=1e-6, rtol=1e-6)


@settings(max_examples=100, deadline=None)
@given(st.lists(groups(max_n=6, allow_nan=False), min_size=2, max_size=4), st.sampled_from(OBJECTIVE_GATES))
def test_batch_scaling_uses_one_std_for_all_groups(batch, objective_gate):
    size = len(batch[0][0])
    batch = [g for g in batch if len(g[0]) == size and g[2] == batch[0][2]]
    objective, gate = objective_gate
    rewards = torch.tensor([g[0] for g in batch], dtype=torch.float64)
    clusters = torch.tensor([g[1] for g in batch])
    got = marginal_set_advantages(rewards, clusters, batch[0][2], objective=objective, gate=gate)
    flat = got.flatten().tolist()
    expected = torch.tensor(reference_scaled(flat, [True] * len(flat)), dtype=torch.float64).view_as(got)
    torch.testing.assert_close(scale_advantages(got, "batch"), expected, atol=1e-6, rtol=1e-6)


@settings(max_examples=100, deadline=None)
@given(groups(allow_nan=False), st.sampled_from(OBJECTIVE_GATES), st.floats(0.25, 8))
def test_set_advantages_are_linear_in_the_rewards_so_scaling_is_exact(group, objective_gate, factor):
    """A(c r) = c A(r) for c > 0 (the objectives are positively homogeneous in r), so the scaled advantage of c r is
    c A(r) / (c std(A(r)) + eps): the scaled variant inherits the closed form's exactness."""
    rewards, clusters, n = group
    objective, gate = objective_gate
    base = advantages(rewards, clusters, n, objective=objective, gate=gate)
    stretched = advantages([r * factor for r in rewards], clusters, n, objective=objective, gate=gate)
    torch.testing.assert_close(stretched, base * factor, atol=1e-9, rtol=1e-9)
    std = base.std().item() if len(rewards) > 1 else 0.0
    scaled = scale_advantages(stretched.unsqueeze(0), "group")[0]
    torch.testing.assert_close(scaled, base * factor / (factor * std + 1e-4), atol=1e-6, rtol=1e-6)


def test_scaling_none_is_identity_and_unknown_is_refused():
    values = torch.tensor([[0.5, -0.5, 0.0]])
    assert scale_advantages(values, "none") is values
    with pytest.raises(ValueError, match="Unknown scaling 'median'"):
        scale_advantages(values, "median")
    assert scale_advantages(torch.tensor([[0.3]]), "group").item() == pytest.approx(0.3 / 1e-4)
