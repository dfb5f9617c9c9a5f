"""The table :func:`fdp_ppl.release` dispatches through (re-exported as :data:`fdp_ppl.releasing.registry.RELEASES`).

A leaf module (standard library only): :mod:`fdp_ppl.releasing.draw` reads it without importing the registry's
mechanism builders, and the families are imported only when one of their objects is released.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class ReleaseEntry:
    """How :func:`fdp_ppl.release` releases one family of fitted objects.

    Attributes
    ----------
    family : str
        Family name used in error messages (``"mean"``, ``"kde"``, ``"erm"``, ``"fpca"``).
    function : str
        ``"module:function"`` that releases it, imported on first use (the families import
        :mod:`fdp_ppl.releasing.draw`, never the reverse); called as
        ``function(fitted, mechanism, draws=..., random_seed=..., ledger=..., **options)``.
    mechanisms : tuple of str
        Qualified class names (``module.Class``) of the mechanisms it accepts (a subclass counts).
    options : tuple of str
        Keyword options of :func:`fdp_ppl.release` it takes beyond ``draws``, ``random_seed``,
        ``ledger``, ``label``, ``dataset`` (``bound``, ``generator``, ``chains``,
        ``allow_nonprivate``, ``progressbar``); an unsupported family option is refused.
    hint : str
        The mechanisms to use, for the refusal of a wrong one.
    """

    family: str
    function: str
    mechanisms: tuple[str, ...]
    options: tuple[str, ...] = ()
    hint: str = ""

    def resolve(self) -> Callable:
        """The release function (imported with :mod:`importlib`)."""
        import importlib

        module, _, name = self.function.partition(":")
        return getattr(importlib.import_module(module), name)


_MEAN_MECHANISM = "fdp_ppl.noise.mechanisms.base.Mechanism"
_GAUSSIAN = "fdp_ppl.noise.mechanisms.gaussian.GaussianMechanism"
_ICLP = "fdp_ppl.noise.mechanisms.laplace.ICLP"

#: release functions by the qualified class name of the fitted object (``type(fitted).__mro__`` is searched,
#: most derived first): the one table :func:`fdp_ppl.release` dispatches through
RELEASES: dict[str, ReleaseEntry] = {
    "fdp_ppl.summaries.base.LinearSummary": ReleaseEntry(
        "mean", "fdp_ppl.releasing.draw:release_linear", (_MEAN_MECHANISM,),
        ("bound", "generator", "allow_nonprivate", "progressbar"),
        "ICLP(epsilon), FRL(epsilon), Bernstein(epsilon), GaussianMechanism(epsilon, delta) or an elliptical "
        "mechanism"),
    "fdp_ppl.kde.gaussian.KDESummary": ReleaseEntry(
        "kde", "fdp_ppl.kde.release:release_kde", (_MEAN_MECHANISM,), ("bound", "generator", "chains"),
        "GaussianMechanism(epsilon, delta) for KDESpec / SobolevKDESpec, ICLP(epsilon) for ICLPKDESpec"),
    "fdp_ppl.erm.machine.ERMFit": ReleaseEntry(
        "erm", "fdp_ppl.erm.release:release_erm", (_GAUSSIAN, _ICLP), ("chains",),
        "GaussianMechanism(epsilon, delta) (eta=None specs) or ICLP(epsilon) (eta > 1 specs)"),
    "fdp_ppl.expmech.fpca.FPCAFit": ReleaseEntry(
        "fpca", "fdp_ppl.expmech.release:fpca_release", ("fdp_ppl.expmech.mechanism.ExponentialMechanism",),
        ("progressbar",), "ExponentialMechanism(sampler='exact') (epsilon is the FPCASpec's)"),
}


def release_entry(fitted) -> ReleaseEntry | None:
    """The :data:`RELEASES` entry of a fitted object (its most derived registered class), or None."""
    for cls in type(fitted).__mro__:
        entry = RELEASES.get(f"{cls.__module__}.{cls.__qualname__}")
        if entry is not None:
            return entry
    return None


__all__ = ["RELEASES", "ReleaseEntry", "release_entry"]
