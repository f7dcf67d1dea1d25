"""The embedding judge (``judges.embedding``): average linkage, scipy's against the hand-written loop it replaced,
and the packaged MiniLM."""

from poly_epo_trl.judges import JudgeSpec
from poly_epo_trl.judges.embedding import EmbeddingJudge, average_linkage_clusters

PROBLEM = "What is 12 * 3?"
COMPLETIONS = ["12 * 3 = 36, so \\boxed{36}", "3 * 12 = 30 + 6 = 36", "\\boxed{36}", ""]


def test_average_linkage():
    import torch

    distances = torch.tensor([[0.0, 0.1, 0.9], [0.1, 0.0, 0.8], [0.9, 0.8, 0.0]])
    assert average_linkage_clusters(distances, 0.25) == [0, 0, 1]
    assert average_linkage_clusters(distances, 0.05) == [0, 1, 2]
    assert average_linkage_clusters(distances, 1.0) == [0, 0, 0]


def merge_closest_until(distances, threshold: float) -> list[int]:
    """The embedding judge's clustering as it was written by hand (a pure-Python loop): merge the two closest
    clusters by mean pairwise distance until the closest pair is farther than ``threshold``."""
    clusters = [[i] for i in range(distances.shape[0])]
    while len(clusters) > 1:
        best, pair = None, None
        for a in range(len(clusters)):
            for b in range(a + 1, len(clusters)):
                d = distances[clusters[a]][:, clusters[b]].mean().item()
                if best is None or d < best:
                    best, pair = d, (a, b)
        if best > threshold:
            break
        a, b = pair
        clusters[a] += clusters.pop(b)
    labels = [0] * distances.shape[0]
    for cluster_id, members in enumerate(sorted(clusters, key=min)):
        for i in members:
            labels[i] = cluster_id
    return labels


def test_scipys_average_linkage_gives_the_clusters_the_hand_written_loop_gave():
    """500 random groups (2 to 16 points, cosine distances of random embeddings, thresholds across their range):
    scipy's linkage and the loop it replaced cluster every one alike."""
    import torch

    generator = torch.Generator().manual_seed(0)
    for _ in range(500):
        count = int(torch.randint(2, 17, (1,), generator=generator))
        centers = torch.randn(int(torch.randint(1, 5, (1,), generator=generator)), 8, generator=generator)
        points = centers[torch.randint(0, len(centers), (count,), generator=generator)]
        points = torch.nn.functional.normalize(points + 0.4 * torch.randn(count, 8, generator=generator), dim=1)
        distances = (1 - points @ points.T).clamp(min=0)
        distances = (distances + distances.T) / 2
        distances.fill_diagonal_(0)
        threshold = float(torch.rand(1, generator=generator)) * 1.2
        assert average_linkage_clusters(distances, threshold) == merge_closest_until(distances, threshold)


def test_embedding_judge_with_the_packaged_minilm():
    judge = JudgeSpec.parse("embedding").build()
    assert isinstance(judge.judge, EmbeddingJudge)
    completions = [
        "Factor the quadratic: (x - 2)(x - 3) = 0, so x = 2 or x = 3.",
        "Factoring gives (x - 2)(x - 3) = 0, hence x = 2 or x = 3.",
        "I love hiking in the mountains on sunny weekends with friends.",
        "   ",
    ]
    labels = judge.cluster_groups([("Solve x^2 - 5x + 6 = 0.", completions)])[0]
    assert labels[0] == labels[1] and labels[2] not in (labels[0], 100) and labels[3] == 100
