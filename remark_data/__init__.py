"""remark-data: responder-marginalized (ReMaRk) reward datasets for GRPO recommenders."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("remark-data")
except PackageNotFoundError:  # running from a source tree without an install
    __version__ = "0.0.0+source"
