"""Parts shared by :mod:`fdp_ppl.inference.population` (one release) and :mod:`fdp_ppl.inference.population_joint`
(several releases of the same people): the model context, shapes, names, a mean release's public content and the
share of a Gaussian population's curves beyond τ."""

from __future__ import annotations

import warnings

import numpy as np

from ..errors import InputError
from ..releasing import schema as S
from .comparison import release_identity

#: public Monte Carlo draws of :func:`outside_tau` per population (standard error at most 0.008)
CLIPPING_SAMPLES = 4000
#: what pointwise log-likelihoods conditional on latent records or latent sufficient statistics mean for PSIS-LOO
#: (measured by benchmarks/bench_records_loo.py on an exact Gaussian analogue, 8 coefficients, 60 data sets)
CONDITIONAL_LOO_NOTE = ("terms conditional on latent variables that each released value alone informs: PSIS-LOO "
                        "(az.loo, az.compare) on them is optimistic when the sampling sd of the released statistic is "
                        "comparable to the noise sd or larger (exact Gaussian analogue, 8 coefficients: elpd too high "
                        "by 1.5 at sampling/noise sd 1 and by 9 at 5, Pareto k > 0.7 in 93-100 % of data sets, the "
                        "model ranking kept in 75 % at 5; unbiased at 0.2, and the integrated terms of "
                        "clipping='moments'/'ignore' unbiased throughout: benchmarks/bench_records_loo.py); check "
                        "the Pareto k and prefer clipping='moments' for model comparison")


def loo_mean_terms(law, y, mean, sampling_cov, noise_var, scale) -> np.ndarray:
    """``log p(y_j | y_{-j}, θ, E_{-j})`` (J,) for a mean release ``y = c + ξ``, ``c ~ N(mean, sampling_cov)``, the
    noise ``ξ_j | E_j ~ N(0, noise_var_j)`` (``noise_var = scale² E``, ``E = 1`` for Normal noise): the non-factorised
    leave-one-out terms (Bürkner, Gabry & Vehtari 2021), ``y_j | y_{-j}, E_{-j}`` the sampling part
    ``N(c_j, 1/d_j − noise_var_j)`` (Gaussian conditioning, :func:`~fdp_ppl.inference.comparison.gaussian_loo_terms`)
    plus the noise ``ξ_j`` with its own ``E_j`` integrated out (:meth:`~fdp_ppl.noise.laws.NoiseLaw.convolved_logp`:
    exact for Normal noise, the Normal–Laplace density for Laplace noise)."""
    from .comparison import gaussian_loo_terms

    r, d = gaussian_loo_terms(y, mean, sampling_cov + np.diag(noise_var))
    g = np.sqrt(np.maximum(1 / d - noise_var, 1e-24 * scale**2))
    return law.convolved_logp((r / d)[None, :], g[None, :], scale[None, :])[0]


def _model(model):
    import pymc as pm

    try:
        return pm.modelcontext(model)
    except TypeError as err:
        raise InputError("fp.observe needs a PyMC model", "call it inside `with pm.Model():`") from err


def _as_tensor(value, shape, what):
    """``value`` as a float PyTensor variable of ``shape`` (checked where the static shape is known)."""
    import pytensor.tensor as pt

    x = pt.as_tensor_variable(value)
    if x.ndim == 0 and len(shape) == 1:
        x = pt.broadcast_to(x, shape)
    if x.ndim != len(shape) or any(s is not None and s != want for s, want in zip(x.type.shape, shape)):
        raise InputError(f"{what} must have shape {shape} on the release's grid, got {x.type.shape}",
                         "build it on the release's grid t (release['posterior']['t'], or constant_data/t_unit)")
    return pt.cast(x, "float64")


def _check_name(model, name, names) -> None:
    if not isinstance(name, str) or not name or "::" in name:
        raise InputError(f"name must be a non-empty string without '::', got {name!r}", "e.g. name='mean_release'")
    taken = set(names) & (set(model.named_vars) | set(model.coords))
    if taken:
        raise InputError(f"the model already has {sorted(taken)}", "give each observed release its own name=")


def _mean_release(release, draw: int) -> dict:
    """The public content of a mean-curve release that :func:`observe` uses (refusing what it does not model)."""
    from ..releasing.registry import SUMMARIES
    from .infer import _shrinkage

    view = S.read_release(release)
    law = view.law
    if not law.product:
        raise InputError(f"fp.observe needs a noise law with independent coefficients; the release has {law.name!r}",
                         "observe a release of the ICLP, FRL, Bernstein or Gaussian mechanism")
    spec_cls = SUMMARIES.get(view.metadata.summary)
    if spec_cls is None or not spec_cls.linear:
        raise InputError(f"fp.observe needs a summary linear in the clipped mean; the release's is "
                         f"{view.metadata.summary!r}", "observe an FRL, ICLP-QR, RKHS, sample-mean or Bernstein release")
    y = view.released(draw)
    if view.n_draws > 1:
        warnings.warn(f"the release holds {view.n_draws} draws; fp.observe uses draw {draw} only (each draw is a "
                      "separate publication)", UserWarning, stacklevel=3)
    K = view.t.size
    offset = np.zeros(K) if view.public_offset is None else np.asarray(view.public_offset, dtype=float)
    return {"view": view, "law": law, "y": y, "design": _shrinkage(view)[:, None] * view.grid_to_coefficients(),
            "offset": offset, "n": int(view.metadata.n), "scale": np.asarray(view.noise_scale, dtype=float),
            "tau": float(view.metadata.tau), "tau_norm": str(view.metadata.extra.get("tau_norm", "l2")),
            "release_id": release_identity(release, draw)}


def outside_tau(mean, covariance, weights, tau: float, *, samples: int = CLIPPING_SAMPLES, random_seed=0) -> float:
    """``P(‖X‖_w > τ)`` for ``X ~ N(mean, covariance)`` on a grid with quadrature weights ``w``: the share of a
    Gaussian population's curves that clipping to τ changes (the grid's L² norm, ``‖x‖²_w = Σ_k w_k x_k²``).

    ``‖X‖²_w = Σ_r λ_r (z_r + δ_r)²`` with ``λ_r`` the eigenvalues of ``W^{½} K W^{½}`` and ``z_r`` independent
    standard normals (a weighted sum of non-central χ²₁), estimated from ``samples`` draws of ``z`` with a fixed
    public seed (a property of the model, never of data; standard error at most ``0.5/√samples``, 0.008 by default).

    Parameters
    ----------
    mean : array_like (K,)
        The population mean minus the release's public offset.
    covariance : array_like (K, K)
    weights : array_like (K,)
    tau : float
    samples : int
    random_seed : int
        Seed of the public Monte Carlo draws (the same draws for every call: smooth in the model's parameters).

    Returns
    -------
    float
        In [0, 1].

    Examples
    --------
    >>> import numpy as np
    >>> from fdp_ppl.inference.population import outside_tau
    >>> round(outside_tau(np.zeros(1), np.eye(1), np.ones(1), 1.96, samples=100_000), 2)  # |N(0, 1)| > 1.96
    0.05
    """
    mean, cov, w = (np.asarray(a, dtype=float) for a in (mean, covariance, weights))
    r = np.sqrt(w)
    lam, U = np.linalg.eigh(0.5 * (cov + cov.T) * r[:, None] * r[None, :])
    a = U.T @ (r * mean)
    keep = lam > 1e-12 * max(float(lam.max()), 1e-300)
    x = float(tau) ** 2 - float(np.sum(a[~keep] ** 2))   # directions without variance contribute their mean only
    lam, a = lam[keep], a[keep]
    z = np.random.default_rng(random_seed).standard_normal((int(samples), lam.size))
    return float(np.mean(((z + a / np.sqrt(lam)) ** 2) @ lam > x))


def grouped_function(model, groups):
    """Compiled: the model's free variables → the values of each group of tensors, as a list of tuples (one per
    group); returns ``(values, names of the free variables in argument order)``."""
    import itertools

    import pytensor

    from ..settings import compile_mode

    inputs = list(model.free_RVs)
    fn = pytensor.function(inputs, [x for g in groups for x in g], on_unused_input="ignore", mode=compile_mode())
    bounds = np.cumsum([0] + [len(g) for g in groups])

    def values(*args):
        flat = fn(*args)
        return [tuple(flat[a:b]) for a, b in itertools.pairwise(bounds)]

    return values, [v.name for v in inputs]
