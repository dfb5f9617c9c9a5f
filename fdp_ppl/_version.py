"""The installed package version (kept apart from ``fdp_ppl/__init__`` so that modules can record it without
importing the whole package).

``__version__`` is read on first use (PEP 562 module ``__getattr__``): :mod:`importlib.metadata` costs about
0.1-0.2 s to import, which ``fdp-ppl --help`` and ``import fdp_ppl`` do not pay.
"""

#: the version a source tree without installed metadata reports
FALLBACK = "0.1.0"
__version__: str  # bound on first use by __getattr__


def __getattr__(name: str) -> str:
    if name != "__version__":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    try:
        value = version("fdp-ppl")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        value = FALLBACK
    globals()["__version__"] = value
    return value


__all__ = ["__version__"]
