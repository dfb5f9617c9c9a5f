"""The installed package version (kept apart from ``fdp_ppl/__init__`` so that
modules can record it without importing the whole package)."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("fdp-ppl")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.1.0"

__all__ = ["__version__"]
