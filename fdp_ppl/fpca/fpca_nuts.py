"""NUTS for ε-DP FPCA: the target on a Euclidean parametrisation of the frame (spec §4.1).

:func:`nuts_parametrisation` (the Gaussian base ``Z = L W``), :func:`fpca_pymc_model` (the PyMC model whose
potential turns span(Z) into the target of Awan, Kenney, Reimherr & Slavković 2019, §4–5) and the NUTS draws a
release takes (one chain per released frame).
"""

from __future__ import annotations

import warnings

import numpy as np

from .fpca import FPCAFit
from .samplers import random_frame


def _frames_from_z(Z: np.ndarray) -> np.ndarray:
    """Orthonormal frames (..., m, k) spanning the columns of Z (..., m, k); signs fixed by diag R > 0."""
    Q, R = np.linalg.qr(Z)
    return Q * np.sign(np.diagonal(R, axis1=-2, axis2=-1))[..., None, :]


def _nuts_frames(fitted: FPCAFit, chains: int, tune: int, rng: np.random.Generator, *, diagnostics: bool,
                 progressbar: bool):
    """NUTS on :func:`fpca_pymc_model`: one chain per released frame, the last state of each (orthonormalised).

    PyMC's log lines are silenced (``quiet=True``: no "Sampling ... took X seconds", a timing side channel on
    the terminal). The run time itself still depends on the data (tree depths); it is not padded.

    Returns
    -------
    frames : ndarray, shape (chains, m, k)
    traces : dict
        With ``diagnostics``: ``invariant`` (chains, tune, 1 + m(m+1)/2) — explained-variance ratio and
        the upper triangle of VVᵀ over ``tune`` draws after tuning — and ``divergences`` (int).
    """
    import pymc as pm

    spec = fitted.spec
    m, k = spec.m, spec.k
    model = fpca_pymc_model(fitted)
    L, _ = nuts_parametrisation(fitted)
    # start: W0 = L⁻¹ Z0, Z0 a uniformly random frame. span(L W0) = span(Z0) is uniform (data-independent); W0 itself
    # depends on the data through L (recorded in the "initialisation" attr)
    inits = [{"W": np.linalg.solve(L, random_frame(m, k, rng))} for _ in range(chains)]
    seeds = [int(s) for s in rng.integers(0, 2**31 - 1, size=chains)]
    keep = tune if diagnostics else 1
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*(divergen|rhat|effective sample|chain).*")
        idata = pm.sample(model=model, draws=keep, tune=tune, chains=chains, cores=1, random_seed=seeds,
                          initvals=inits, init="adapt_diag", progressbar=progressbar, quiet=True,
                          compute_convergence_checks=False, var_names=["W", "explained", "projection"]
                          if diagnostics else ["W"])
    Z = L @ np.asarray(idata["posterior"]["W"].values[:, -1], dtype=float)
    out = {}
    if diagnostics:
        iu = np.triu_indices(m)
        P = np.asarray(idata["posterior"]["projection"].values)
        out["invariant"] = np.concatenate([np.asarray(idata["posterior"]["explained"].values)[..., None],
                                           P[..., iu[0], iu[1]]], axis=-1)
        out["divergences"] = int(np.asarray(idata["sample_stats"]["diverging"].values).sum())
    return _frames_from_z(Z), out


def nuts_parametrisation(fitted: FPCAFit) -> tuple[np.ndarray, np.ndarray]:
    """The Gaussian base of the NUTS parametrisation: ``Z = L W``, W with i.i.d. N(0, 1) entries.

    The columns of Z are i.i.d. N(0, C), so span(Z) has the matrix angular
    central Gaussian law ACG(C), density ``det(VᵀC⁻¹V)^{-m/2}`` w.r.t. the
    uniform law on frames (Chikuse 2003, §2.4). C is the ACG envelope of
    Kent, Ganeiber & Mardia (2018) for ``etr(VᵀMV)``, with M = A (Bingham form)
    or M = ε/(2Δ)G − ½Σ⁻¹ (GP-base form): ``C⁻¹ = I + 2Λ/b`` in the
    eigenvectors of −M (:func:`~fdp_ppl.fpca.samplers.acg_envelope`). The
    potential corrects ACG(C) to the target exactly, so the choice of C only
    changes how well NUTS mixes: the W-space looks nearly standard normal
    instead of a funnel (the target depends on span(Z) alone).

    Returns
    -------
    L : ndarray, shape (m, m)
        ``C = L Lᵀ``.
    C_inv : ndarray, shape (m, m)
    """
    from .samplers import acg_envelope

    spec = fitted.spec
    G = np.asarray(fitted.gram, dtype=float)
    if spec.form == "bingham":
        M = spec.bingham_parameter(G)
    else:
        M = spec.scale * G - 0.5 * np.linalg.inv(spec.Sigma)
    env = acg_envelope(M)
    U, omega = env["U"], env["omega"]
    return U / np.sqrt(omega), (U * omega) @ U.T


def fpca_pymc_model(fitted: FPCAFit):
    """PyMC model of the spec's FPCA target on a Euclidean auxiliary variable (spec §4.1), for NUTS.

    PyMC has no Stiefel transform, so the frame is the span of ``Z = L W``
    (m×k), W with i.i.d. N(0, 1) entries (:func:`nuts_parametrisation`): span(Z)
    has the ACG(C) law, and the potential

    ``log f(V) + (m/2) log det(VᵀC⁻¹V)``,  V an orthonormal basis of span(Z),

    with ``log f`` the target's log-density w.r.t. the uniform law on frames
    (:meth:`~fdp_ppl.fpca.fpca.FPCASpec.log_density`: ``tr(VᵀAV)``, A = ε/(2Δ)(G − Σ⁻¹), for
    ``bingham``; ``ε/(2Δ) tr(VᵀGV) − (m/2) log det(VᵀΣ⁻¹V)`` for ``gp-base``,
    Thm 4.1–4.2) turns it into the target: span(Z) has exactly the target law.
    Log-determinants use ``log det(VᵀMV) = log det(ZᵀMZ) − log det(ZᵀZ)``.
    Draws are not exact (MCMC); compute diagnostics on ``explained`` =
    tr(GP)/tr(G) or on the projection P = Z(ZᵀZ)⁻¹Zᵀ, never on W. A release
    takes an orthonormal basis of span(Z) of ONE draw per chain (each released
    draw costs ε).

    Parameters
    ----------
    fitted : FPCAFit

    Returns
    -------
    pm.Model
        Variable ``W`` (m, k); potential ``expmech``; deterministics
        ``projection`` (m, m) and ``explained``.
    """
    import pymc as pm
    import pytensor.tensor as pt

    spec = fitted.spec
    m, k = spec.m, spec.k
    G = np.asarray(fitted.gram, dtype=float)
    L, C_inv = nuts_parametrisation(fitted)

    def logdet(Z, M):  # log det(Zᵀ M Z), a k×k positive-definite matrix
        return 2.0 * pt.sum(pt.log(pt.diag(pt.linalg.cholesky(pt.dot(Z.T, pt.dot(M, Z))))))

    with pm.Model() as model:
        W = pm.Normal("W", 0.0, 1.0, shape=(m, k))
        Z = pt.dot(L, W)
        ZtZ = pt.dot(Z.T, Z)
        P = pt.dot(Z, pt.linalg.solve(ZtZ, Z.T, assume_a="pos"))
        pm.Deterministic("projection", P)
        ld_gram = logdet(Z, np.eye(m))
        if spec.form == "bingham":
            log_f = pt.sum(spec.bingham_parameter(G) * P)
        else:
            log_f = spec.scale * pt.sum(G * P) - 0.5 * m * (logdet(Z, np.linalg.inv(spec.Sigma)) - ld_gram)
        log_acg = -0.5 * m * (logdet(Z, C_inv) - ld_gram)
        pm.Potential("expmech", log_f - log_acg)
        pm.Deterministic("explained", pt.sum(G * P) / max(float(np.trace(G)), 1e-300))
    return model
