"""Simulation-based calibration (Talts et al. 2018) of :func:`fdp_ppl.inference.components.infer_components`
(Bingham releases, any k): replicate releases from the prior, rank the truth among posterior draws, test the
ranks for uniformity."""

from __future__ import annotations

import warnings

import numpy as np

from ..releasing import schema as S
from .components import FrameLikelihood, _likelihood_scale, _read_fpca, _resolve_prior, infer_components


#: scalar summaries ranked by :func:`sbc_ranks` (k = 1)
SBC_SUMMARIES = ("explained_variance_ratio", "trace", "top_eigenvalue", "alignment", "frame_loglik")
#: the same for k > 1, with the k-th eigenvalue added
SBC_SUMMARIES_K = SBC_SUMMARIES + ("kth_eigenvalue",)


def sbc_summary_names(k: int) -> tuple:
    """Names of the ranked summaries for frames of k columns."""
    return SBC_SUMMARIES if k == 1 else SBC_SUMMARIES_K


def _sbc_summaries(Sm: np.ndarray, reference: np.ndarray, likelihood: FrameLikelihood) -> np.ndarray:
    """(..., 5) summaries (k = 1; (..., 6) for k > 1): Σ_{j≤k} λ_j / tr S, tr S, λ₁, ‖U_kᵀR‖²_F / k (the top-k
    eigenspace against a fixed public frame R (m, k); (u₁ᵀr)² for k = 1), the log-likelihood of the released
    frames (a function of S and the data; its ranks are uniform too, and it is the summary most sensitive to a
    wrong likelihood scale or normaliser), and for k > 1 λ_k."""
    R = reference[:, None] if reference.ndim == 1 else reference
    k = R.shape[1]
    w, U = np.linalg.eigh(Sm)
    w, U = w[..., ::-1], U[..., :, ::-1]
    tr = np.sum(w, axis=-1)
    align = np.sum((np.swapaxes(U[..., :, :k], -1, -2) @ R) ** 2, axis=(-2, -1)) / k
    out = [np.sum(w[..., :k], axis=-1) / tr, tr, w[..., 0], align, likelihood.logp(Sm).sum(axis=-1)]
    if k > 1:
        out.append(w[..., k - 1])
    return np.stack(out, axis=-1)


def sbc_ranks(spec, n: int, replicates: int, *, prior=None, frames: int = 1, draws: int = 200, tune: int = 300,
              chains: int = 2, thin: int = 2, random_seed=None, scale_factor: float = 1.0, progress=None,
              scans: int = 50, sampler: str = "gibbs") -> dict:
    """Simulation-based calibration (Talts et al. 2018) of
    :func:`~fdp_ppl.inference.components.infer_components`.

    Each replicate draws S from the prior, G = nS, ``frames`` frames (one release of ``frames`` draws) from the
    mechanism with the package's sampler (:func:`fdp_ppl.release` on an :class:`~fdp_ppl.fpca.FPCAFit` holding
    G: exact ACG rejection for k = 1, ``scans`` Gibbs scans for k > 1 — whose law is the matrix Bingham law up to
    the chain's distance from it, which SBC then checks too — or, with ``sampler="sequential"``, the certified
    sequential release, whose law is the sequential Bingham law), fits the posterior
    with :func:`~fdp_ppl.inference.components.infer_components`, and ranks the true value of each of
    :data:`SBC_SUMMARIES` among the thinned
    posterior draws. Uniform ranks for every summary are what a correct likelihood and sampler give.

    Parameters
    ----------
    spec : fdp_ppl.fpca.FPCASpec
        Bingham form, any k.
    n : int
        Public number of records.
    replicates : int
    prior : ComponentsPrior, optional
    frames : int
        Released frames per replicate (independent observations; more frames make the posterior sharper and the
        calibration check more sensitive to a wrong likelihood).
    draws, tune, chains, thin
        NUTS settings per fit; ranks use every ``thin``-th draw (L = chains·draws/thin draws, ranks 0..L).
    random_seed : int or None
    scale_factor : float
        Multiplies s in the simulated mechanism only (1: calibrated; e.g. √2 shows what a wrong scale does).
    progress : callable, optional
        Called with the replicate index after each fit.
    scans : int
        Gibbs scans per released frame (k > 1).
    sampler : {"gibbs", "sequential"}
        The k > 1 release: Gibbs scans (inferred with the matrix Bingham law) or the sequential mechanism
        (inferred with the sequential Bingham law; the release's attrs select the law).

    Returns
    -------
    dict
        ``ranks`` (replicates, S) ints in [0, L] for the S summaries of :func:`sbc_summary_names`, ``L``,
        ``summaries`` (the names), ``seconds`` per fit, ``divergences`` per fit.
    """
    import time

    from ..errors import SeededReleaseWarning
    from ..fpca import FPCAFit, FPCASpec
    import fdp_ppl as fp

    prior = _resolve_prior(prior)
    rng = np.random.default_rng(random_seed)
    m, k = spec.m, spec.k
    ref = np.eye(m)[:, :k]  # a fixed public frame (the first k basis functions)
    sim_spec = spec if scale_factor == 1.0 else FPCASpec(grid=spec.grid, m=m, k=k, epsilon=spec.epsilon * scale_factor,
                                                        tau=spec.tau, basis=spec.basis, sigma=spec.Sigma, form=spec.form)
    if k == 1:
        mech = fp.ExponentialMechanism()
    elif sampler == "sequential":
        mech = fp.ExponentialMechanism(sampler="sequential")
    elif sampler == "gibbs":
        mech = fp.ExponentialMechanism(sampler="gibbs", iterations=int(scans))
    else:
        from ..errors import InputError

        raise InputError(f"unknown SBC sampler {sampler!r}", "pass 'gibbs' or 'sequential'")
    ranks, secs, divs = [], [], []
    for r in range(int(replicates)):
        S_true = prior.draw(m, 1, rng)[0]
        fit = FPCAFit(spec=sim_spec, gram=n * S_true, n=int(n))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SeededReleaseWarning)
            tree = fp.release(fit, mech, draws=int(frames),
                              random_seed=int(rng.integers(2**31 - 1)), study=True)
        if scale_factor != 1.0:  # the fit reads the nominal epsilon
            tree.attrs["epsilon"] = spec.epsilon
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            post = infer_components(tree, prior, draws=draws, tune=tune, chains=chains,
                                    random_seed=int(rng.integers(2**31 - 1)), posterior_predictive=False)
        secs.append(time.perf_counter() - t0)
        divs.append(int(post.attrs.get("diagnostic_divergences", 0)))
        Sd = np.asarray(post[S.POSTERIOR]["second_moment"].values)[:, ::thin].reshape(-1, m, m)
        at, released, sigma, _, _ = _read_fpca(tree)
        lik = FrameLikelihood.build(released, sigma, _likelihood_scale(at), int(n), post.attrs["log_constant"])
        truth = _sbc_summaries(S_true, ref, lik)
        ranks.append(np.sum(_sbc_summaries(Sd, ref, lik) < truth, axis=0))
        if progress is not None:
            progress(r)
    L = chains * len(range(0, draws, thin))
    return {"ranks": np.asarray(ranks), "L": L, "summaries": sbc_summary_names(k), "seconds": np.asarray(secs),
            "divergences": np.asarray(divs)}


def rank_uniformity(ranks: np.ndarray, L: int, bins: int) -> tuple[np.ndarray, np.ndarray]:
    """Chi-square test that SBC ranks in [0, L] are uniform, per column: (statistics, p-values).

    Ranks are grouped into ``bins`` equal-width bins of the L + 1 possible values (L + 1 divisible by ``bins``
    keeps the cells equiprobable; otherwise the expected counts are computed exactly)."""
    from scipy import stats

    ranks = np.atleast_2d(np.asarray(ranks))
    if ranks.shape[0] == 1 and ranks.ndim == 2 and ranks.shape[1] > 1 and ranks.size == ranks.shape[1]:
        ranks = ranks.T
    edges = np.linspace(0, L + 1, bins + 1)
    values = np.arange(L + 1)
    expected = np.histogram(values, edges)[0] / (L + 1)
    stat, pval = [], []
    for col in ranks.T:
        counts = np.histogram(col, edges)[0]
        e = expected * col.size
        st = float(np.sum((counts - e) ** 2 / e))
        stat.append(st)
        pval.append(float(stats.chi2.sf(st, bins - 1)))
    return np.asarray(stat), np.asarray(pval)


__all__ = ["sbc_ranks", "rank_uniformity", "sbc_summary_names", "SBC_SUMMARIES", "SBC_SUMMARIES_K"]
