"""The likelihood of a clipped mean release given a population model, where clipping to τ binds.

A mean release publishes ``S A x̄_τ + ξ`` with ``x̄_τ = (1/n) Σ_i clip_τ(X_i − o)``: each record, less the public
offset ``o``, is clipped (``"l2"``: ``x ↦ x · min(1, τ/‖x‖_w)``, the grid L² norm; ``"sup"``: ``x ↦ clamp(x, −τ, τ)``,
:mod:`fdp_ppl.summaries.curves`). When the population puts curves beyond τ the closed form of
:func:`fdp_ppl.inference.population.observe` (``x̄ ~ N(μ − o, K/n)``) no longer holds. Two likelihoods replace it:

``"moments"`` (any n; the default where clipping may bind)
    The central limit theorem for the mean of n i.i.d. clipped curves, ``x̄_τ ≈ N(m_τ, C_τ / n)``, with the
    clipped moments ``m_τ = E clip_τ(X − o)`` and ``C_τ = Cov clip_τ(X − o)`` of the Gaussian population
    ``X = μ + L ζ`` (``L Lᵀ = K``) computed on a fixed public set of S points ``ζ_s`` (scrambled Sobol points mapped
    to normals, then moment-matched so that their mean is 0 and their second moment is I exactly;
    :func:`normal_points`). The same points at every evaluation (common random numbers): the log-likelihood is a
    continuous, almost everywhere differentiable function of ``(μ, L)`` and NUTS uses its gradient. Written through
    the *excess* ``e_s = x_s − clip_τ(x_s)`` (zero for every point inside τ):

    ``m_τ = (μ − o) − ē``,   ``C_τ = K + (μ − o)(μ − o)ᵀ − (1/S) Σ_s (x_s e_sᵀ + e_s x_sᵀ − e_s e_sᵀ) − m_τ m_τᵀ``,

    which equals the points' sample moments of ``clip_τ(x_s)`` (the points' moments are exact) and reduces to
    ``(μ − o, K)`` exactly when no point is clipped: as τ → ∞ the likelihood is the unclipped one. Approximations:
    (i) the CLT (clipped curves are bounded by τ, so its error falls as ``n^{-1/2}`` (Berry–Esseen) and vanishes in
    the second moment); (ii) the S-point quadrature, whose error :func:`moment_error` measures at posterior draws
    against an independent set of :data:`REFERENCE_FACTOR` · S points, in units of the likelihood's standard
    deviation (recorded by :func:`fdp_ppl.inference.population.population_result`).

``"records"`` (small n; exact)
    Data augmentation: the n confidential records as latent variables ``X_i = μ + L ζ_i``, ``ζ_i ~ N(0, I)``
    (non-centred), the released coefficients given them ``S A x̄_τ + ξ`` with the release's own noise law — the
    exact likelihood, at the cost of n·K latent variables (so only for ``n ≤`` :data:`RECORDS_MAX_N`).

Which one, :func:`clipping_plan`: from public quantities only — the release's n and τ and the user's population
model (its *prior*, :data:`PRIOR_DRAWS` draws of ``(μ, K)``; never the data): when the prior puts at most
:data:`BINDING_SHARE` of curves beyond τ at every draw, the unclipped closed form; otherwise ``"records"`` for
``n ≤ RECORDS_MAX_N`` and ``"moments"`` above.

Costs no privacy: public content and the user's model only.
"""

from __future__ import annotations

import numpy as np

#: public quadrature points of the clipped moments (scrambled Sobol, a power of two)
CLIPPING_POINTS = 2048
#: seed of the public points (fixed: the same points for every model and every evaluation)
POINTS_SEED = 20261127
#: the reference of :func:`moment_error` has this many times the likelihood's points (independent scramble)
REFERENCE_FACTOR = 8
#: prior draws of (μ, K) that :func:`clipping_plan` checks for curves beyond τ
PRIOR_DRAWS = 40
#: a prior draw putting more than this share of curves beyond τ makes clipping "bind" (:func:`clipping_plan`)
BINDING_SHARE = 1e-3
#: largest n for which clipping that binds is handled by record-level data augmentation (exact)
RECORDS_MAX_N = 30
#: the choices of ``clipping=`` in :func:`fdp_ppl.observe`
CLIPPING_CHOICES = ("auto", "moments", "records", "ignore")


def normal_points(size: int, dim: int, *, seed: int = POINTS_SEED) -> np.ndarray:
    """``size`` public standard-normal points in ``dim`` dimensions whose sample mean is 0 and sample second moment
    the identity exactly (scrambled Sobol points through the normal quantile, then centred and whitened).

    Parameters
    ----------
    size : int
        Number of points S (> dim; a power of two keeps the Sobol balance).
    dim : int
    seed : int

    Returns
    -------
    ndarray (size, dim)

    Examples
    --------
    >>> z = normal_points(256, 3)
    >>> np.allclose(z.mean(0), 0), np.allclose(z.T @ z / 256, np.eye(3))
    (True, True)
    """
    from scipy import stats
    from scipy.stats import qmc

    u = qmc.Sobol(d=dim, scramble=True, seed=seed).random(size)
    z = stats.norm.ppf(np.clip(u, 0.5 / size, 1 - 0.5 / size))
    z = z - z.mean(0)
    c = np.linalg.cholesky(z.T @ z / size)
    return np.linalg.solve(c, z.T).T


def excess(x, weights, tau: float, norm: str, xp=np):
    """``x − clip_τ(x)`` row by row (zero rows inside τ), numpy or PyTensor (``xp``); ``x`` (S, K)."""
    if norm == "sup":
        return x - xp.clip(x, -tau, tau)
    nrm = xp.sqrt(xp.sum(x * x * weights, axis=1))
    shrink = 1.0 - xp.minimum(1.0, tau / xp.maximum(nrm, 1e-300))
    return shrink[:, None] * x


def clipped_moments(centred, chol, points, weights, tau: float, norm: str = "l2", xp=np):
    """Mean (K,) and covariance (K, K) of ``clip_τ(X)`` for ``X ~ N(centred, L Lᵀ)`` on the points (module
    docstring, ``"moments"``); numpy or PyTensor (``xp``; its gradient flows to ``centred`` and ``chol``).

    Parameters
    ----------
    centred : array (K,)
        Population mean minus the public offset.
    chol : array (K, K)
        Lower Cholesky factor of the population covariance.
    points : ndarray (S, K)
        :func:`normal_points`.
    weights : ndarray (K,)
        Grid quadrature weights (``"l2"``).
    tau : float
    norm : {"l2", "sup"}

    Examples
    --------
    >>> z = normal_points(4096, 1)
    >>> m, c = clipped_moments(np.zeros(1), np.eye(1), z, np.ones(1), 1.0, "sup")
    >>> round(float(m[0]), 3), round(float(c[0, 0]), 2)   # clamp of N(0, 1) to [-1, 1]: variance 0.52
    (0.0, 0.52)
    """
    S = points.shape[0]
    x = centred + xp.dot(points, chol.T)
    e = excess(x, weights, tau, norm, xp)
    cross = xp.dot(x.T, e)
    m = centred - xp.mean(e, axis=0)
    second = xp.dot(chol, chol.T) + centred[:, None] * centred[None, :] - (cross + cross.T - xp.dot(e.T, e)) / S
    return m, second - m[:, None] * m[None, :]


def record_statistics(x, offset, weights, tau: float, norm: str, coef_map, coef_weights, coef_tau: float, xp=np):
    """What a mean release and a components release of the same people compute from each record: rows of ``x``
    (S, K), uncentred curves on the grid, → the mean release's clipped centred curve ``a = clip_τ(x − o)`` (S, K)
    and the components release's clipped coefficient row ``d = clip_1(B_c clip_{τ_c}(x))`` (S, m), ``B_c`` the
    coefficient map ``B_wᵀ/τ_c`` (:meth:`fdp_ppl.fpca.FPCASpec.coefficients`: the curve clipped to grid L² norm
    τ_c and divided by τ_c, its coefficient row clipped to norm ≤ 1); numpy or PyTensor (``xp``)."""
    centred = x - offset
    a = centred - excess(centred, weights, tau, norm, xp)
    c = xp.dot(x - excess(x, coef_weights, coef_tau, "l2", xp), coef_map.T)
    return a, c - excess(c, np.ones(coef_map.shape[0]), 1.0, "l2", xp)


def joint_clipped_moments(mean, chol, points, offset, weights, tau: float, norm: str, coef_map, coef_weights,
                          coef_tau: float, xp=np):
    """Means and covariances of the two clipped per-record statistics of :func:`record_statistics` for a Gaussian
    population ``X ~ N(μ, L Lᵀ)``, on the public points (as :func:`clipped_moments`): ``(m_a, m_d, C_aa, C_da, C_dd)``,
    shapes (K,), (m,), (K, K), (m, K), (m, m). Where no point is clipped they are ``(μ − o, B_c μ, K, B_c K,
    B_c K B_cᵀ)`` up to rounding (the points' first two moments are exact).

    Examples
    --------
    >>> z = normal_points(1024, 2)
    >>> B = np.array([[1.0, 0.0]])
    >>> ma, md, caa, cda, cdd = joint_clipped_moments(np.zeros(2), np.eye(2), z, np.zeros(2), np.ones(2), 1e6, "l2",
    ...                                               B / 10, np.ones(2), 10.0)
    >>> np.allclose(cda, B / 10), np.allclose(cdd, 0.01)
    (True, True)
    """
    x = mean + xp.dot(points, chol.T)
    a, d = record_statistics(x, offset, weights, tau, norm, coef_map, coef_weights, coef_tau, xp)
    m_a, m_d = xp.mean(a, axis=0), xp.mean(d, axis=0)
    ac, dc = a - m_a, d - m_d
    S = points.shape[0]
    return m_a, m_d, xp.dot(ac.T, ac) / S, xp.dot(dc.T, ac) / S, xp.dot(dc.T, dc) / S


def moment_error(centred, cov, design, n: int, noise_var, weights, tau: float, norm: str, points) -> dict:
    """The quadrature error of the clipped moments at one population ``(μ − o, K)``: the likelihood's S points against
    an independent reference of :data:`REFERENCE_FACTOR` · S points, on the release's coefficients.

    Returns
    -------
    dict
        ``mean``: ``max_j |Δ(S A m_τ)_j| / sd_j``, the error of the likelihood's mean in units of its standard deviation
        ``sd_j = (S A C_τ Aᵀ S / n + noise variance)_jj^{1/2}``; ``cov``: the largest relative error of the
        likelihood's covariance diagonal; ``reference_se``: the reference's own Monte Carlo standard error of the
        mean in the same units (the resolution of ``mean``).
    """
    S, K = points.shape
    ref = normal_points(REFERENCE_FACTOR * S, K, seed=POINTS_SEED + 1)
    L = np.linalg.cholesky(0.5 * (cov + cov.T) + 1e-12 * np.trace(cov) / K * np.eye(K))
    m, c = clipped_moments(centred, L, points, weights, tau, norm)
    mr, cr = clipped_moments(centred, L, ref, weights, tau, norm)
    var = np.einsum("jk,kl,jl->j", design, cr, design) / n + noise_var
    var_s = np.einsum("jk,kl,jl->j", design, c, design) / n + noise_var
    x = centred + ref @ L.T
    clip_ref = x - excess(x, weights, tau, norm)
    se = np.sqrt(np.var(clip_ref @ design.T, axis=0) / ref.shape[0])
    return {"mean": float(np.max(np.abs(design @ (m - mr)) / np.sqrt(var))),
            "cov": float(np.max(np.abs(var_s - var) / var)),
            "reference_se": float(np.max(se / np.sqrt(var)))}


def clipping_plan(model, mean, covariance, *, n: int, tau: float, norm: str, weights, offset, clipping: str = "auto",
                  random_seed: int = 0, also=None) -> tuple[str, float]:
    """Which likelihood handles clipping, from public quantities only: the release's n, τ and the population model's
    prior (module docstring). Returns ``(choice, share)``: ``"ignore"`` (no prior draw clips more than
    :data:`BINDING_SHARE` of curves), ``"records"`` or ``"moments"``, and the largest prior share of curves beyond τ
    among :data:`PRIOR_DRAWS` draws (``nan`` when ``clipping`` is not ``"auto"``). ``also``: a function
    ``(μ, K) → share`` of a second clipping of the same curves (a joint observation's components release), counted
    with the first.

    Raises
    ------
    InputError
        ``clipping`` not one of :data:`CLIPPING_CHOICES`.
    """
    import pymc as pm

    from ..errors import InputError
    from .population_parts import outside_tau

    if clipping not in CLIPPING_CHOICES:
        raise InputError(f"clipping must be one of {CLIPPING_CHOICES}, got {clipping!r}",
                         "leave clipping='auto' (chosen from n, tau and the model's prior)")
    if clipping != "auto":
        return clipping, float("nan")
    with model:
        mus, covs = pm.draw([mean, covariance], draws=PRIOR_DRAWS, random_seed=random_seed)
    share = 0.0
    for mu, cov in zip(mus, covs):
        centred = mu - offset
        if norm == "sup":
            L = np.linalg.cholesky(0.5 * (cov + cov.T) + 1e-12 * np.trace(cov) * np.eye(cov.shape[0]))
            x = centred + normal_points(1024, cov.shape[0]) @ L.T
            s = float(np.mean(np.any(np.abs(x) > tau, axis=1)))
        else:
            s = outside_tau(centred, cov, weights, tau, samples=1000)
        share = max(share, s, 0.0 if also is None else also(mu, cov))
    if share <= BINDING_SHARE:
        return "ignore", share
    return ("records" if n <= RECORDS_MAX_N else "moments"), share


__all__ = ["BINDING_SHARE", "CLIPPING_CHOICES", "CLIPPING_POINTS", "PRIOR_DRAWS", "RECORDS_MAX_N", "REFERENCE_FACTOR",
           "clipped_moments", "clipping_plan", "excess", "joint_clipped_moments", "moment_error", "normal_points",
           "record_statistics"]
