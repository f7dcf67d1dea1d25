"""Constants every layer agrees on."""

from importlib.metadata import PackageNotFoundError, version


def installed_version() -> str:
    """This package's version, as installed (setup.cfg's, the one place it is written); ``0+unknown`` for a source
    tree that was never installed."""
    try:
        return version("poly_epo_trl")
    except PackageNotFoundError:
        return "0+unknown"


VERSION = installed_version()

DEGENERATE_CLUSTER_ID = 100  # the judge's label for a degenerate completion: it counts for no strategy
BUILTIN_PREFIX = "builtin:"  # a recipe's name for a built-in task (dataset_name) or model (model_name_or_path)
