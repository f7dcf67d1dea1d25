"""Constants every layer agrees on."""

DEGENERATE_CLUSTER_ID = 100  # the judge's label for a degenerate completion: it counts for no strategy
