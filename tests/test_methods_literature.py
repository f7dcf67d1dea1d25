"""The exploration methods of the literature, each pinned by its paper's or official code's worked numbers and checked
against a direct reference, written from the paper's equation or the released code's steps, on random groups."""

import math
from itertools import combinations

import pytest
import torch

from poly_epo_trl.advantages import STD_EPSILON, pkpo_group
from poly_epo_trl.methods import METHODS, SetBatch, apply_method, resolve_settings
from poly_epo_trl.methods.f_grpo import focal_weights
from poly_epo_trl.methods.max_rl import max_rl_advantages
from poly_epo_trl.methods.pass_at_k import group_advantages
from poly_epo_trl.methods.ucpo import ucpo_advantages
from poly_epo_trl.methods.unlikeliness import unlikeliness_advantages

LITERATURE = ("max_rl", "f_grpo", "pkpo", "ucpo", "unlikeliness", "ips_grpo", "uniqueness", "outcome_batch")
DEGENERATE = 100


def batch_of(rewards, clusters=None, logprobs=None, lengths=None, threshold=1.0, floor=0.0) -> SetBatch:
    r = torch.as_tensor(rewards, dtype=torch.float64)
    c = torch.as_tensor(clusters if clusters is not None else [list(range(r.shape[1]))] * r.shape[0])
    size = r.numel()
    batch = SetBatch(
        r, c, torch.full_like(r, torch.nan), "train", ["q"] * size, ["a"] * size, ["a"] * size,
        [None] * r.shape[0], correct_reward_threshold=threshold, reward_floor=floor,
    )  # fmt: skip
    if logprobs is not None:
        batch.sequence_logprobs = torch.as_tensor(logprobs, dtype=torch.float64)
        batch.completion_lengths = torch.as_tensor(lengths, dtype=torch.float64)
    return batch


def run(name: str, batch: SetBatch, scale_rewards: str = "none", **given) -> torch.Tensor:
    method = METHODS.get(name)
    result = apply_method(method, batch, resolve_settings(method, given, batch.group_size).settings, scale_rewards)
    return result.advantages if result.advantages is not None else result.bonus


def binary_groups(seed: int, groups: int = 20, size: int = 8) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return (torch.rand(groups, size, generator=generator, dtype=torch.float64) < 0.4).to(torch.float64)


def sampled_logprobs(shape: torch.Size, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Random summed log-probabilities in (-40, 0] and lengths in [3, 30) for rollouts of ``shape``."""
    generator = torch.Generator().manual_seed(seed)
    logprobs = -torch.rand(shape, generator=generator, dtype=torch.float64) * 40
    lengths = torch.randint(3, 30, shape, generator=generator).to(torch.float64)
    return logprobs, lengths


def test_every_method_is_registered_with_its_paper_and_defaults():
    for name in LITERATURE:
        method = METHODS.get(name)
        assert method.paper and method.paper["id"] and method.paper["id"] in method.paper["citation"], name
        for spec in method.setting_fields():
            assert spec.metadata["help"], (name, spec.name)
    defaults = {
        name: {f.name: f.default for f in METHODS.get(name).setting_fields()} for name in LITERATURE
    }  # the papers' (the released scripts' where the code is the reference)
    assert defaults["f_grpo"] == {"focal_gamma": 0.5}
    assert defaults["ucpo"] == {"ucpo_tau": 0.2}
    assert defaults["unlikeliness"] == {"unlikeliness_beta": 0.25}
    assert defaults["pkpo"] == {"set_size": 4, "pkpo_baseline": "loo_minus_one"}


# MaxRL ---------------------------------------------------------------------------------------------------------------


def test_max_rl_is_algorithm_1_and_the_papers_estimator_times_n():
    """Algorithm 1: A = (r - mean) / mean, 0 where mean = 0. The paper's estimator weights each score function by
    r_i / K - 1 / N (K the successes): N times that is A. Two of eight correct: 3 and -1."""
    advantages = max_rl_advantages(torch.tensor([[1.0, 1, 0, 0, 0, 0, 0, 0]]))[0]
    n, k = 8, 2
    estimator = [n * (r / k - 1 / n) for r in [1, 1, 0, 0, 0, 0, 0, 0]]
    assert advantages.tolist() == estimator == [3, 3, -1, -1, -1, -1, -1, -1]
    assert max_rl_advantages(torch.zeros(1, 8)).abs().sum() == 0  # no success: no gradient
    assert max_rl_advantages(torch.tensor([[1.0]])).tolist() == [[0.0]]  # a group of one: 0, not r / 1e-6


def test_max_rl_equals_the_official_code_where_the_code_is_defined():
    """The released p_normalization estimator, (r - mean) / (mean + 1e-6), on groups of 2+ with a success."""
    rewards = binary_groups(1)
    rewards = rewards[rewards.sum(1) > 0]
    mean = rewards.mean(1, keepdim=True)
    code = (rewards - mean) / (mean + 1e-6)
    torch.testing.assert_close(max_rl_advantages(rewards), code, rtol=1e-5, atol=1e-6)


def test_max_rl_reads_signed_rewards_from_the_floor_and_owns_its_scaling():
    """Rewards of -1 and 0: read from the floor -1 they are 0 and 1, the MaxRL of a binary group; the run's
    scale_rewards is not applied on top."""
    signed = run("max_rl", batch_of([[0.0, -1, -1, -1]], floor=-1.0), scale_rewards="group")
    assert signed[0].tolist() == [3.0, -1.0, -1.0, -1.0]


# F-GRPO --------------------------------------------------------------------------------------------------------------


def test_f_grpo_is_the_focal_weighted_grpo_advantage_and_the_runs_scaling_does_not_cancel_it():
    """Two of eight correct, gamma 0.5: GRPO's (1 - 0.25) / std times (1 - 2/8)^0.5. A group's std scaling on top
    would divide the weight back out; the method owns its normalisation, so scale_rewards='group' changes nothing."""
    rewards = [[1.0, 1, 0, 0, 0, 0, 0, 0]]
    std = torch.tensor(rewards[0]).std().item()
    expected = [w * 0.75**0.5 for w in [0.75 / (std + STD_EPSILON)] * 2 + [-0.25 / (std + STD_EPSILON)] * 6]
    for scaling in ("none", "group", "batch"):
        torch.testing.assert_close(run("f_grpo", batch_of(rewards), scaling)[0], torch.tensor(expected).double())
    assert focal_weights(torch.tensor([[1.0, 1, 1, 0]]), 1.0, 0.5).item() == pytest.approx(0.5)  # (1 - 3/4)^0.5
    assert run("f_grpo", batch_of([[1.0] * 8])).abs().sum() == 0  # all solved: weight 0 (and no spread)


def test_f_grpo_against_its_formula_on_random_groups():
    rewards = binary_groups(2)
    for gamma in (0.0, 0.5, 2.0):
        got = run("f_grpo", batch_of(rewards), focal_gamma=gamma)
        for row, g in zip(rewards, got, strict=True):
            c, n = row.sum().item(), len(row)
            grpo = (row - row.mean()) / (row.std() + 1e-4) if row.std() > 0 else torch.zeros_like(row)
            torch.testing.assert_close(g, grpo * (1 - c / n) ** gamma)


# PKPO ----------------------------------------------------------------------------------------------------------------


def brute_force_pkpo(g: list[float], k: int, baseline: str) -> list[float]:
    """Eq. 19 and Eq. 33 by enumerating every k-subset, with the paper's 1 / C(n, k)."""
    n = len(g)
    s, loo = [0.0] * n, [0.0] * n
    for subset in combinations(range(n), k):
        best = max(g[j] for j in subset)
        for i in subset:
            s[i] += best / math.comb(n, k)
            rest = [g[j] for j in subset if j != i]
            loo[i] += (best - max(rest)) / math.comb(n, k)
    if baseline == "mean":
        mean = sum(s) / n
        return [v - mean for v in s]
    return loo


def test_pkpo_pins_the_published_twelfths():
    """n = 4, c = 2, k = 2, the mean baseline: +1/12 for a correct rollout, -1/12 for a wrong one."""
    got = run("pkpo", batch_of([[1.0, 1.0, 0.0, 0.0]]), set_size=2, pkpo_baseline="mean")[0]
    torch.testing.assert_close(got, torch.tensor([1 / 12, 1 / 12, -1 / 12, -1 / 12], dtype=torch.float64))


@pytest.mark.parametrize("baseline", ["loo_minus_one", "mean"])
@pytest.mark.parametrize("k", [2, 3, 4, 7])
def test_pkpo_equals_its_equations_by_enumeration_on_continuous_rewards(baseline, k):
    generator = torch.Generator().manual_seed(k)
    for _ in range(5):
        g = torch.rand(8, generator=generator, dtype=torch.float64)
        g[2] = g[5]  # ties too
        expected = brute_force_pkpo(g.tolist(), k, baseline)
        torch.testing.assert_close(pkpo_group(g, k, baseline), torch.tensor(expected, dtype=torch.float64))


def test_pass_at_k_is_the_mean_baselined_pkpo_rescaled_by_n_over_k_and_sigma():
    for row in binary_groups(3, groups=30):
        n, k = len(row), 4
        correct = [bool(v) for v in row]
        pass_k = 1 - math.comb(correct.count(False), k) / math.comb(n, k)
        sigma = math.sqrt(pass_k * (1 - pass_k))
        if sigma == 0:
            continue
        rescaled = (n / k) * pkpo_group(row, k, "mean") / sigma
        torch.testing.assert_close(rescaled, torch.tensor(group_advantages(correct, k), dtype=torch.float64))


# UCPO ----------------------------------------------------------------------------------------------------------------


def released_iq(scores, seq_logp, lengths, tau):
    """The released compute_dgrpo_advantage_outcome_invq_l (alpha = 0) step by step, one group, for 0/1 rewards."""
    scores = torch.as_tensor(scores, dtype=torch.float64)
    mean, std = scores.mean(), scores.std(unbiased=True)
    advantages = (scores - mean) / (std + 1e-8)
    original = advantages.clone()
    correct = scores > 0
    if correct.sum() > 1:
        idx = correct.nonzero().squeeze(-1)
        log_pi_scaled = torch.as_tensor(seq_logp, dtype=torch.float64)[idx] / torch.as_tensor(lengths)[idx]
        log_q = log_pi_scaled - torch.logsumexp(log_pi_scaled, dim=0)
        q = log_q.exp()
        inv_q = 1.0 / q.clamp(min=1e-6)
        blended = (1.0 - tau) * torch.ones_like(q) / correct.sum() + tau * inv_q / inv_q.sum()
        advantages[idx] = original[idx[0]] * blended * correct.sum()
    return advantages


def test_ucpo_equals_the_released_iq_estimator_on_random_groups():
    rewards = binary_groups(4, groups=25)
    logprobs, lengths = sampled_logprobs(rewards.shape, seed=4)
    got = run("ucpo", batch_of(rewards, logprobs=logprobs, lengths=lengths), scale_rewards="group")
    for g in range(rewards.shape[0]):
        torch.testing.assert_close(got[g], released_iq(rewards[g], logprobs[g], lengths[g], 0.2))


def test_ucpo_keeps_the_correct_rollouts_total_and_moves_it_to_the_unlikely_ones():
    """The code's own claims: tau = 0 is GRPO; the correct rollouts' total advantage is kept; at tau = 1 a correct
    rollout's advantage is proportional to 1/q, so the least likely one gets the most."""
    rewards = torch.tensor([[1.0, 1, 1, 0, 0, 0, 0, 0]])
    logprobs = torch.tensor([[-2.0, -6, -12, -5, -5, -5, -5, -5]], dtype=torch.float64)
    lengths = torch.full((1, 8), 2.0)
    grpo = ucpo_advantages(rewards, logprobs, lengths, 1.0, 0.0)
    full = ucpo_advantages(rewards, logprobs, lengths, 1.0, 1.0)
    mid = ucpo_advantages(rewards, logprobs, lengths, 1.0, 0.2)
    assert torch.allclose(grpo[0, :3], grpo[0, 0].expand(3))
    for advantages in (full, mid):
        assert advantages[0, :3].sum().item() == pytest.approx(grpo[0, :3].sum().item())
        torch.testing.assert_close(advantages[0, 3:], grpo[0, 3:])  # wrong ones keep GRPO's
    q = torch.softmax(logprobs[0, :3] / 2, 0)
    torch.testing.assert_close(full[0, :3] / full[0, :3].sum(), (1 / q) / (1 / q).sum())
    assert full[0, 2] > full[0, 1] > full[0, 0]


def test_a_method_that_reads_log_probabilities_on_a_batch_without_them_is_a_clear_error():
    with pytest.raises(ValueError, match="Method 'ucpo' reads each completion's log-probability and length"):
        run("ucpo", batch_of([[1.0, 1.0, 0.0, 0.0]]))


# Unlikeliness --------------------------------------------------------------------------------------------------------


def released_rank_penalty(scores, old_log_probs_mean, rank_penalty):
    """The official _compute_advantages, one group."""
    scores = torch.as_tensor(scores, dtype=torch.float64)
    logp = torch.as_tensor(old_log_probs_mean, dtype=torch.float64)
    ranks = torch.argsort(torch.argsort(logp)) / len(scores)
    modified = scores * (1 - ranks * rank_penalty)
    return (modified - modified.mean()) / (modified.std() + 1e-6)


def test_unlikeliness_pins_a_worked_group_and_equals_the_official_code_on_random_groups():
    """Four rollouts, the two correct ones the most and the least likely: the least likely keeps its reward 1, the
    most likely keeps 1 - 0.25 x 3/4."""
    rewards = torch.tensor([[1.0, 0, 0, 1]])
    logprobs, lengths = torch.tensor([[-1.0, -2, -3, -4]]), torch.ones(1, 4)
    modified = torch.tensor([1 - 0.25 * 3 / 4, 0, 0, 1], dtype=torch.float64)
    expected = (modified - modified.mean()) / (modified.std() + 1e-6)
    torch.testing.assert_close(unlikeliness_advantages(rewards, logprobs, lengths, 0.25)[0], expected)
    rewards = binary_groups(5, groups=25)
    logprobs, lengths = sampled_logprobs(rewards.shape, seed=5)
    got = run("unlikeliness", batch_of(rewards, logprobs=logprobs, lengths=lengths), scale_rewards="group")
    for g in range(rewards.shape[0]):
        if rewards[g].std() > 0:
            torch.testing.assert_close(got[g], released_rank_penalty(rewards[g], logprobs[g] / lengths[g], 0.25))


# The three methods whose papers leave choices open -------------------------------------------------------------------


def test_ips_grpo_divides_the_correct_rewards_by_their_clusters_share():
    """Correct rollouts in clusters of 3 and 1 of a group of 8: rewards 8/3 and 8, the wrong ones 0, then GRPO's."""
    rewards = [[1.0, 1, 1, 1, 0, 0, 0, 0]]
    clusters = [[0, 0, 0, 1, 2, 3, DEGENERATE, DEGENERATE]]
    scaled = torch.tensor([8 / 3] * 3 + [8.0, 0, 0, 0, 0], dtype=torch.float64)
    expected = (scaled - scaled.mean()) / (scaled.std() + STD_EPSILON)
    torch.testing.assert_close(run("ips_grpo", batch_of(rewards, clusters))[0], expected)
    half = torch.tensor([(8 / 3) ** 0.5] * 3 + [8**0.5, 0, 0, 0, 0], dtype=torch.float64)
    got = run("ips_grpo", batch_of(rewards, clusters), ips_power=0.5)[0]
    torch.testing.assert_close(got, (half - half.mean()) / (half.std() + STD_EPSILON))
    continuous = run("ips_grpo", batch_of([[0.5, 0.5, 1.0, 0.2]], [[0, 0, 1, 2]]), ips_scope="all")[0]
    shares = torch.tensor([0.5 / 0.5, 0.5 / 0.5, 1.0 / 0.25, 0.2 / 0.25], dtype=torch.float64)
    torch.testing.assert_close(continuous, (shares - shares.mean()) / (shares.std() + STD_EPSILON))


def test_uniqueness_reweights_correct_advantages_inversely_with_cluster_size():
    rewards = [[1.0, 1, 1, 0, 0, 0]]
    clusters = [[0, 0, 1, 2, 2, DEGENERATE]]
    grpo = torch.tensor(rewards[0], dtype=torch.float64)
    grpo = (grpo - grpo.mean()) / (grpo.std() + STD_EPSILON)
    weights = torch.tensor([1 / 2, 1 / 2, 1, 1, 1, 1], dtype=torch.float64)
    torch.testing.assert_close(run("uniqueness", batch_of(rewards, clusters))[0], grpo * weights)
    wrong_too = torch.tensor([1 / 2, 1 / 2, 1, 1 / 2, 1 / 2, 1], dtype=torch.float64)
    got = run("uniqueness", batch_of(rewards, clusters), uniqueness_reweight_wrong=True)[0]
    torch.testing.assert_close(got, grpo * wrong_too)


def test_batch_exploration_penalises_repeated_answers():
    clusters = [[0, 0, 0, 1, 2, 2, DEGENERATE, 3]]
    rewards = [[1.0, 1, 1, 1, 0, 0, 0, 1]]
    penalty = run("outcome_batch", batch_of(rewards, clusters))[0]
    assert penalty.tolist() == [-2 / 7, -2 / 7, -2 / 7, 0, 0, 0, 0, 0]
    penalty = run("outcome_batch", batch_of(rewards, clusters), outcome_batch_scope="all")[0]
    assert penalty.tolist() == [-2 / 7, -2 / 7, -2 / 7, 0, -1 / 7, -1 / 7, 0, 0]
