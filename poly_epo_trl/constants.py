"""Constants every layer agrees on."""

DEGENERATE_CLUSTER_ID = 100  # the judge's label for a degenerate completion: it counts for no strategy
BUILTIN_PREFIX = "builtin:"  # a recipe's name for a built-in task (dataset_name) or model (model_name_or_path)
