"""Planted privacy bugs: calibration and sampler errors an audit must catch (:func:`planted`).

Each bug changes one thing in a mechanism's noise while its claim (ε, δ, the recorded scale and sensitivity)
stays as it was — what a reviewer of released files looks for. :data:`BUGS` lists them with the mechanism and
family to audit and the true effective ε the bug gives (exact: the Laplace ratio, the Gaussian profile of Balle &
Wang 2018, the t-process profile ``E_W[δ_G(ε; Δ/(σ√W))]`` of Reimherr & Awan 2019 at the sampler's law).

Used by ``tests/auditing`` and ``benchmarks/bench_audit.py``; nothing in the library imports it.

Examples
--------
>>> from fdp_ppl.testing.plants import BUGS
>>> sorted(BUGS)
['density-noise', 'frl-scale', 'gaussian-sigma', 'iclp-ar-scale', 't-process-mixing']
>>> BUGS["gaussian-sigma"].mechanism, BUGS["gaussian-sigma"].delta
('gaussian', 1e-05)
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass


@dataclass(frozen=True)
class Bug:
    """One planted bug.

    Attributes
    ----------
    name : str
    mechanism, family : str
        What :func:`fdp_ppl.audit` audits (``fp.audit(mechanism, family=family, delta=delta)``).
    delta : float or None
        The claimed δ passed to the audit (None for pure ε-DP mechanisms).
    true_epsilon : float
        The effective ε of the bugged mechanism at the claimed δ, for the claim ε = 1.
    description : str
    """

    name: str
    mechanism: str
    family: str
    delta: float | None
    true_epsilon: float
    description: str


#: the planted bugs (true ε for the claim ε = 1; see the module docstring)
BUGS = {
    "frl-scale": Bug("frl-scale", "frl", "mean", None, 1.5, "FRL Laplace scale divided by 1.5"),
    "iclp-ar-scale": Bug("iclp-ar-scale", "iclp-ar", "mean", None, 1.5,
                         "ICLP scale divided by 1.5 on ICLP-AR (soft-thresholded) summaries only"),
    "gaussian-sigma": Bug("gaussian-sigma", "gaussian", "mean", 1e-5, 1.3349,
                          "Gaussian mechanism sigma divided by 1.3 (delta = 1e-5)"),
    "t-process-mixing": Bug("t-process-mixing", "t-process", "mean", 1e-5, 1.2030,
                            "t process: the sampler draws the mixing variable W with nu/2 degrees of freedom "
                            "(InvGamma(nu/4, nu/4)) while sigma is calibrated for nu (nu = 5, delta = 1e-5)"),
    "density-noise": Bug("density-noise", "gp", "kde", 1e-5, 2.1547,
                         "Gaussian KDE (Hall et al. 2013): density noise sigma divided by 2 (delta = 1e-5)"),
}


@contextlib.contextmanager
def planted(name: str):
    """Plant the bug ``name`` (a key of :data:`BUGS`) for the duration of the block.

    Every public part kept across releases is forgotten on entry and exit (the compiled samplers: the mixing-law
    bug lives in the sampler's graph; the calibrations and templates kept per public configuration:
    :func:`fdp_ppl.releasing.draw.clear_public_cache`, which forgets every registered cache), so neither
    the bug nor a correct calibration outlives its block.

    Raises
    ------
    KeyError
        An unknown bug.
    """
    from ..noise.laws import Elliptical
    from ..noise.mechanisms import FRL, ICLP, GaussianMechanism
    from ..summaries import ICLPARSpec

    if name not in BUGS:
        raise KeyError(f"unknown bug {name!r}; one of {sorted(BUGS)}")
    saved = []

    def patch(owner, attr, make):
        original = owner.__dict__[attr]
        saved.append((owner, attr, original))
        setattr(owner, attr, make(original))

    if name == "frl-scale":
        patch(FRL, "_sigma", lambda f: lambda self, s, spec: f(self, s, spec) / 1.5)
    elif name == "iclp-ar-scale":
        patch(ICLP, "_sigma", lambda f: lambda self, s, spec: f(self, s, spec) / (1.5 if isinstance(spec, ICLPARSpec)
                                                                                   else 1.0))
    elif name == "gaussian-sigma":
        patch(GaussianMechanism, "_sigma", lambda f: lambda self, s, spec: f(self, s, spec) / 1.3)
    elif name == "density-noise":
        from ..kde import KDESpec

        patch(GaussianMechanism, "_sigma", lambda f: lambda self, s, spec: f(self, s, spec) / (
            2.0 if isinstance(spec, KDESpec) else 1.0))
    elif name == "t-process-mixing":
        def make(f):
            def _w(self, n_components, name=None, size=None):
                if self.kind != "t":
                    return f(self, n_components, name, size)
                import pymc as pm

                kw = {"size": size} if name is None else {}
                half = self.nu / 4  # the bug: nu/2 degrees of freedom
                return (pm.InverseGamma.dist(alpha=half, beta=half, **kw) if name is None
                        else pm.InverseGamma(name, alpha=half, beta=half))
            return _w

        patch(Elliptical, "_w", make)
    _forget()
    try:
        yield BUGS[name]
    finally:
        for owner, attr, original in reversed(saved):
            setattr(owner, attr, original)
        _forget()


def _forget() -> None:
    from ..releasing.draw import clear_public_cache

    clear_public_cache()


__all__ = ["BUGS", "Bug", "planted"]
