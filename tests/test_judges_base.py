"""The judge interface (``judges.base``, ``judges.simple``): ids renumbered without ever naming a real cluster as
degenerate; clusters by key."""


def test_normalize_labels_never_numbers_a_real_cluster_as_degenerate():
    from poly_epo_trl.judges import normalize_labels

    labels = normalize_labels([*range(1000, 1150), 100, 1000])
    assert labels[:100] == list(range(100)) and labels[100:150] == list(range(101, 151))
    assert labels[150] == 100 and labels[151] == 0 and labels.count(100) == 1
    assert normalize_labels([5, 7, 5], degenerate_cluster_id=0) == [1, 2, 1]


def test_clusters_by_numbers_keys_in_order_and_none_is_degenerate():
    from poly_epo_trl.constants import DEGENERATE_CLUSTER_ID
    from poly_epo_trl.judges import clusters_by

    degenerate = DEGENERATE_CLUSTER_ID
    assert clusters_by([(3, 5), None, (5, 3), (3, 5), "x", None]) == [0, degenerate, 1, 0, 2, degenerate]
