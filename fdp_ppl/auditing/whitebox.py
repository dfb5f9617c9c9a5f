"""White-box audit: the noise law fitted from released draws, and the ε it implies.

What a reviewer does with released files: release many times on synthetic public data, subtract the known
non-private summary of that data (synthetic, so public), fit the law of what is left — per-coefficient scales, the
mixing law of an elliptical process — and compute the ε (at the claimed δ) that the *fitted* law gives for the
claimed sensitivity. A correct mechanism gives the claimed ε up to sampling error; a noise scale, calibration or
mixing law that is off by a factor shows at once, where a black-box lower bound may need far more draws.

Fits (``NoiseClaim.law``):

``"laplace"`` (ICLP, FRL, Bernstein; independent coefficients)
    ``b̂_j = mean|r_j|`` (the Laplace MLE with known centre). The sensitivity ball of the ℓ¹-type norms
    ``Σ_j w_j|h_j| ≤ Δ`` (``w_j = 1/√λ_j`` for ``"1,C"``, 1 for ``"l1"``) gives the privacy loss
    ``sup Σ_j |h_j|/b̂_j = Δ max_j 1/(w_j b̂_j)``: one estimate per coefficient, ``ε_j = Δ/(w_j b̂_j)``.
``"normal"`` (Gaussian mechanism)
    ``ŝ_j² = mean r_j²``; the Cameron–Martin ball ``Σ_j h_j²/λ_j ≤ Δ²`` gives the Gaussian privacy-loss
    parameter ``μ = Δ max_j √λ_j/ŝ_j``: per coefficient ``μ_j = Δ√λ_j/ŝ_j`` and the ε at which the
    Gaussian profile (Balle & Wang 2018) equals the claimed δ.
``"elliptical-process"`` (t process, Laplace process: ``σ √W √λ_j z_j`` with one W per release)
    The whitened radius ``R² = Σ_j r_j²/λ_j`` is ``S χ²_J`` with ``S = σ²W``. The law of S is fitted by
    maximum likelihood in the generalised inverse Gaussian family (``∝ s^{p−1} e^{−(a s + b/s)/2}``, which holds
    the inverse gamma of the t process, the exponential of the Laplace process and the gamma laws of a mixing
    variable drawn without its inversion), on a log grid of s, from binned radii; then
    ``δ(ε) = E_S[δ_G(ε; Δ/√S)]`` (Reimherr & Awan 2019, corrected Theorem 5; exact in infinite dimensions)
    and the ε where it equals the claimed δ. One estimate; its standard error from a bootstrap of the binned
    radii (multinomial resampling, refit).
``"elliptical"`` (pure ε: t or K-norm on the J coefficients)
    ``S = σ²W`` with W the claimed mixing law, σ̂ by maximum likelihood; ε from corrected Theorem 3 at
    ``Δ/σ̂`` (:func:`fdp_ppl.noise.elliptical.privacy.privacy_epsilon`). The scale is checked, the mixing law is
    the claimed one.

Sensitivity: the white-box test also evaluates the non-private summaries of the audit's neighbouring pairs
(synthetic, public) in the mechanism's norm; ``Δ_eff = max(Δ_claimed, max over pairs ‖f_D − f_D′‖)``, so a summary
whose worst pair exceeds its claimed sensitivity is caught too, and ``sensitivity_reached`` says how close the
pairs come to the claimed Δ.

Decision rule (stated false-positive rate): with K estimates (one per coefficient, or one), flag when
``max_k (ε̂_k − z·se_k) > ε (1 + tol)`` with ``z = Φ⁻¹(1 − α/K)`` (Bonferroni) and ``α = 1 − confidence``. For a
correct mechanism each ``ε̂_k`` estimates at most ε, so the flag fires with probability at most α (asymptotically,
delta method or bootstrap standard errors); ``tol`` (default :data:`WHITEBOX_TOLERANCE`) absorbs the small bias
of a finite fit.

Sources: Balle & Wang (2018), ICML (the Gaussian privacy profile); Reimherr & Awan (2019), NeurIPS, Theorems 3
and 5 (elliptical perturbations, corrected in ``specs/elliptical.md``); Lin & Reimherr (2026), Theorem 8 (ICLP);
Barndorff-Nielsen (1977) (generalised inverse Gaussian laws).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import optimize, special, stats

#: relative slack of the white-box decision: flag when the lower bound exceeds ε (1 + tol)
WHITEBOX_TOLERANCE = 0.01
#: bootstrap refits of the elliptical-process mixing law (its standard error)
BOOTSTRAP = 25
LAWS = ("laplace", "normal", "elliptical-process", "elliptical")
_GRID = 400  # log-grid nodes of S = σ²W
_BINS = 800  # bins of log R²


@dataclass(frozen=True)
class NoiseClaim:
    """What a release claims about its noise, and how to read its draws (public: spec, mechanism, claim).

    Attributes
    ----------
    law : {"laplace", "normal", "elliptical-process", "elliptical"}
    norm : {"1,C", "l1", "cameron-martin"}
        The sensitivity norm of the claim.
    eigenvalues : ndarray, shape (J,)
        ``λ_j`` of the retained coefficients (the norm's weights; ones for ``"l1"`` summaries without them).
    sensitivity : float
        The claimed Δ in ``norm``.
    epsilon, delta : float
        The claim.
    centre : callable
        ``centre(dataset) -> ndarray (J,)``: the non-private coefficients of a synthetic dataset.
    coefficients : callable
        ``coefficients(features) -> ndarray (N, J)``: released coefficients from the audit's released vectors.
    kind : str, optional
        Elliptical kind (``"t"``, ``"laplace"``, ``"knorm"``, ``"gaussian"``).
    nu : float, optional
        Degrees of freedom of a t law.
    description : str
    """

    law: str
    norm: str
    eigenvalues: np.ndarray
    sensitivity: float
    epsilon: float
    delta: float
    centre: Callable[[Any], np.ndarray]
    coefficients: Callable[[np.ndarray], np.ndarray]
    kind: str | None = None
    nu: float | None = None
    description: str = ""

    def weights(self) -> np.ndarray:
        """``w_j`` of the norm: ``1/√λ_j`` ("1,C", "cameron-martin"), 1 ("l1"), shape (J,)."""
        lam = np.asarray(self.eigenvalues, float)
        return np.ones_like(lam) if self.norm == "l1" else 1.0 / np.sqrt(lam)

    def norm_of(self, h) -> np.ndarray:
        """The claim's norm of coefficient differences ``h`` (..., J)."""
        wh = np.asarray(h, float) * self.weights()
        return np.sqrt(np.sum(wh * wh, -1)) if self.norm == "cameron-martin" else np.sum(np.abs(wh), -1)


@dataclass(frozen=True)
class WhiteBoxResult:
    """The white-box test of one audit (see the module docstring).

    Attributes
    ----------
    epsilon : float
        Effective ε estimated from the fitted law (the deciding estimate), at the claimed δ for (ε, δ) claims.
    standard_error : float
        Its standard error (delta method; bootstrap for the elliptical-process mixing law).
    lower : float
        ``epsilon − z·standard_error``, the one-sided Bonferroni lower confidence bound used by the decision.
    z : float
        ``Φ⁻¹(1 − α/K)``.
    flagged : bool
        ``lower > claimed·(1 + tolerance)``.
    claimed, delta : float
        The claim.
    tolerance, alpha : float
    estimates : int
        K, the number of estimates the Bonferroni correction covers.
    sensitivity_claimed : float
    sensitivity_reached : float
        ``max over pairs ‖f_D − f_D′‖ / Δ_claimed`` (NaN without pairs).
    releases : int
        Released draws the law was fitted on.
    fit : str
        The fitted law in words.
    """

    epsilon: float
    standard_error: float
    lower: float
    z: float
    flagged: bool
    claimed: float
    delta: float
    tolerance: float
    alpha: float
    estimates: int
    sensitivity_claimed: float
    sensitivity_reached: float
    releases: int
    fit: str

    def describe(self) -> str:
        """One line: estimate ± se, the bound and the rule."""
        return (f"{self.epsilon:.4f} +- {self.standard_error:.2g} (lower bound {self.lower:.4f} at z = {self.z:.2f}; "
                f"flag when > {self.claimed * (1 + self.tolerance):.4g})")


# ----------------------------------------------------------------------------- Gaussian privacy profile
def gaussian_profile(epsilon, mu) -> np.ndarray:
    """``δ_G(ε; μ) = Φ(μ/2 − ε/μ) − e^ε Φ(−μ/2 − ε/μ)`` (Balle & Wang 2018, Theorem 8), vectorised over μ.

    Parameters
    ----------
    epsilon : float
    mu : array_like
        ``Δ/σ`` (0 gives δ = 0).
    """
    mu = np.asarray(mu, float)
    with np.errstate(divide="ignore", invalid="ignore"):
        m = np.maximum(mu, 1e-300)
        out = np.exp(special.log_ndtr(m / 2 - epsilon / m)) - np.exp(epsilon + special.log_ndtr(-m / 2 - epsilon / m))
    return np.where(mu > 0, np.clip(out, 0.0, 1.0), 0.0)


def epsilon_at_delta(delta_of_eps: Callable[[float], float], delta: float, hi: float = 1.0) -> float:
    """The ε ≥ 0 at which a nonincreasing profile ``δ(ε)`` equals ``delta`` (0 when ``δ(0) ≤ delta``)."""
    if delta_of_eps(0.0) <= delta:
        return 0.0
    while delta_of_eps(hi) > delta:
        hi *= 2.0
        if hi > 1e6:
            return math.inf
    return float(optimize.brentq(lambda e: delta_of_eps(e) - delta, 0.0, hi, xtol=1e-10, rtol=1e-10))


def gaussian_epsilon(mu: float, delta: float) -> float:
    """ε of the Gaussian mechanism with ``μ = Δ/σ`` at ``delta``."""
    return epsilon_at_delta(lambda e: float(gaussian_profile(e, mu)), delta, hi=max(1.0, mu * mu))


# ----------------------------------------------------------------------------- fits
def _laplace(R, w, Delta, eps_claim, delta):
    a = np.abs(R)
    b = a.mean(0)
    se_rel = a.std(0, ddof=1) / (math.sqrt(len(R)) * b)
    est = Delta / (w * b)
    fit = "Laplace scales b_j = " + ", ".join(f"{v:.4g}" for v in b[:6]) + (" ..." if b.size > 6 else "")
    return est, est * se_rel, fit


def _normal(R, w, Delta, eps_claim, delta):
    q = R * R
    s2 = q.mean(0)
    s = np.sqrt(s2)
    se_rel = 0.5 * q.std(0, ddof=1) / (math.sqrt(len(R)) * s2)
    mu = Delta / (w * s)
    est, se = np.empty_like(mu), np.empty_like(mu)
    for j, m in enumerate(mu):
        e = gaussian_epsilon(m, delta)
        e2 = gaussian_epsilon(m * (1 + 1e-4), delta)
        est[j] = e
        se[j] = abs(e2 - e) / 1e-4 * se_rel[j]
    fit = "Normal sds s_j = " + ", ".join(f"{v:.4g}" for v in s[:6]) + (" ..." if s.size > 6 else "")
    return est, se, fit


class _RadiusModel:
    """Binned whitened radii R² = S χ²_J and a log grid of S; GIG weights on the grid."""

    def __init__(self, r2: np.ndarray, J: int):
        self.J = J
        r2 = r2[np.isfinite(r2) & (r2 > 0)]
        lr = np.log(r2)
        edges = np.linspace(lr.min() - 1e-9, lr.max() + 1e-9, _BINS + 1)
        self.counts = np.histogram(lr, edges)[0].astype(float)
        keep = self.counts > 0
        centres = 0.5 * (edges[1:] + edges[:-1])
        self.counts, self.lr = self.counts[keep], centres[keep]
        self.m = float(np.median(r2)) / J
        self.ls = math.log(self.m) + np.linspace(math.log(1e-9), math.log(1e4), _GRID)
        # log density of log R² given S = s: log χ²_J pdf at r²/s plus log(r²/s)
        x = np.exp(self.lr[:, None] - self.ls[None, :])
        logk = stats.chi2.logpdf(x, J) + np.log(x)
        self.row = logk.max(1)
        self.kern = np.exp(logk - self.row[:, None])  # (bins, grid): the likelihood is one matrix-vector product
        self.n = float(self.counts.sum())
        self.lu = self.ls - math.log(self.m)
        self.u = np.exp(self.lu)

    def logw(self, theta):
        """Log weights on the grid of ``S ~ GIG(p, a, b)`` in units of m: ``p, log a, log b`` (normalised)."""
        p, la, lb = theta
        lw = p * self.lu - 0.5 * (np.exp(la) * self.u + np.exp(lb) / self.u)  # density × ds (ds ∝ s, log grid)
        top = np.max(lw)
        return lw - (top + math.log(np.sum(np.exp(lw - top))))

    def nll(self, theta, counts=None):
        c = self.counts if counts is None else counts
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            ll = np.log(self.kern @ np.exp(self.logw(theta))) + self.row
        v = -float(np.dot(c, ll))
        return v if np.isfinite(v) else 1e300

    def fit(self, counts=None, starts=None):
        best = None
        for t0 in starts:
            res = optimize.minimize(self.nll, np.asarray(t0, float), args=(counts,), method="Nelder-Mead",
                                    options={"xatol": 1e-4, "fatol": 1e-3, "maxiter": 1500})
            if best is None or res.fun < best.fun:
                best = res
        return best.x

    def epsilon(self, theta, Delta, delta):
        w = np.exp(self.logw(theta))
        mu = Delta / np.exp(0.5 * self.ls)
        keep = w > 1e-300
        w, mu = w[keep], mu[keep]
        return epsilon_at_delta(lambda e: float(np.dot(w, gaussian_profile(e, mu))), delta)


def _starts(m_claim_nu, J):
    """Starting points (p, log a, log b) in units of m = median(R²)/J: inverse gamma (t), exponential, gamma."""
    starts = []
    for nu in ([m_claim_nu] if m_claim_nu else []) + [3.0, 10.0]:
        starts.append((-nu / 2, math.log(1e-6), math.log(nu)))
    starts += [(1.0, math.log(2.0), math.log(1e-6)), (20.0, math.log(40.0), math.log(1e-6))]
    return starts


def _claimed_theta(kind, nu, ls2, m):
    """GIG parameters (p, log a, log b) in units of m of ``S = σ²W`` with W's claimed law (None if not GIG)."""
    if kind == "t":  # S ~ InvGamma(ν/2, scale σ²ν/2): p = −ν/2, a = 0, b = σ²ν
        return (-nu / 2, -50.0, ls2 + math.log(nu) - math.log(m))
    if kind == "laplace":  # S ~ Exp(mean σ²): p = 1, a = 2/σ², b = 0
        return (1.0, math.log(2.0 * m) - ls2, -50.0)
    return None


def _elliptical_process(R, w, Delta, eps_claim, delta, kind, nu, rng):
    u = R * w  # whitened by the claimed shape (Cameron–Martin weights 1/√λ_j)
    model = _RadiusModel(np.sum(u * u, 1), u.shape[1])
    theta = model.fit(starts=_starts(nu, u.shape[1]))
    est = model.epsilon(theta, Delta, delta)
    boots = []
    p = model.counts / model.n
    for _ in range(BOOTSTRAP):
        c = rng.multinomial(int(model.n), p).astype(float)
        boots.append(model.epsilon(model.fit(c, starts=[theta]), Delta, delta))
    se = float(np.std(boots, ddof=1))
    pp, la, lb = theta
    fit = (f"S = sigma^2 W ~ GIG(p = {pp:.3g}, a = {math.exp(la) / model.m:.3g}, b = {math.exp(lb) * model.m:.3g}) "
           f"fitted to {int(model.n)} whitened radii (J = {u.shape[1]})")
    ests, ses = [est], [se]
    if _claimed_theta(kind, nu, 0.0, model.m) is not None:  # σ alone, W's law as claimed: a second estimate
        def f(ls2):
            return model.nll(_claimed_theta(kind, nu, ls2, model.m))

        ls2 = float(optimize.minimize_scalar(f, bracket=(math.log(model.m) - 1, math.log(model.m) + 1)).x)
        # used only while the data do not reject the claimed law against the fitted one (likelihood ratio, 2 df,
        # at 1e-3): under another law the one-parameter fit is misspecified and its ε means nothing
        lr = 2.0 * (f(ls2) - model.nll(theta))
        if lr > stats.chi2.isf(1e-3, 2):
            return np.array(ests), np.array(ses), fit + (f"; the claimed mixing law ({kind}) is rejected "
                                                         f"(likelihood ratio {lr:.3g})")
        h = 1e-3
        se_ls2 = 1.0 / math.sqrt(max((f(ls2 + h) - 2 * f(ls2) + f(ls2 - h)) / h**2, 1e-300))
        e1 = model.epsilon(_claimed_theta(kind, nu, ls2, model.m), Delta, delta)
        e2 = model.epsilon(_claimed_theta(kind, nu, ls2 + h, model.m), Delta, delta)
        ests.append(e1)
        ses.append(abs(e2 - e1) / h * se_ls2)
        fit += f"; with the claimed mixing law ({kind}): sigma = {math.exp(0.5 * ls2):.4g}"
    return np.array(ests), np.array(ses), fit


def _elliptical_pure(R, w, Delta, eps_claim, kind, nu, J):
    from ..noise.elliptical.privacy import privacy_epsilon
    from ..noise.laws import Elliptical

    law = Elliptical(kind, nu=nu)
    u = R * w
    r2 = np.sum(u * u, 1)
    mix = law.mixing_law(J)
    # S = σ² W, R² = S χ²_J: MLE of σ² with W's claimed law (400 quantiles), on binned log radii
    wq = np.asarray(mix.dist.ppf((np.arange(400) + 0.5) / 400), float)
    lr = np.log(r2[r2 > 0])
    edges = np.linspace(lr.min() - 1e-9, lr.max() + 1e-9, _BINS + 1)
    counts = np.histogram(lr, edges)[0].astype(float)
    keep = counts > 0
    counts, centres = counts[keep], 0.5 * (edges[1:] + edges[:-1])[keep]

    def nll(ls2):
        x = np.exp(centres[:, None] - ls2 - np.log(wq)[None, :])
        lk = stats.chi2.logpdf(x, J) + np.log(x)
        return -float(np.dot(counts, special.logsumexp(lk, axis=1) - math.log(wq.size)))

    m = float(np.median(r2) / (J * np.median(wq)))  # the σ² that matches the median radius
    res = optimize.minimize_scalar(nll, bracket=(math.log(m) - 0.5, math.log(m) + 0.5))
    ls2 = float(res.x)
    h = 1e-3
    curv = (nll(ls2 + h) - 2 * nll(ls2) + nll(ls2 - h)) / h**2
    se_ls2 = 1.0 / math.sqrt(max(curv, 1e-300))
    fam = law.family(J)
    sig = math.exp(0.5 * ls2)
    est = float(privacy_epsilon(fam, Delta, sig).epsilon)
    est2 = float(privacy_epsilon(fam, Delta, sig * math.exp(0.5 * 1e-3)).epsilon)
    se = abs(est2 - est) / 1e-3 * se_ls2
    return np.array([est]), np.array([se]), f"dispersion scale sigma = {sig:.4g} under the claimed mixing law ({kind})"


def whitebox_test(claim: NoiseClaim, samples, pairs=(), confidence: float = 0.95,
                  tolerance: float = WHITEBOX_TOLERANCE, random_seed=0) -> WhiteBoxResult:
    """Fit the noise law from released draws on synthetic datasets and test the claim (module docstring).

    Parameters
    ----------
    claim : NoiseClaim
    samples : iterable of (dataset, features)
        Synthetic datasets and the audit's released vectors on each, shape (N_i, d) (NaN rows are dropped).
    pairs : iterable of (D, D′)
        Neighbouring synthetic datasets whose non-private summaries give the sensitivity the pairs reach.
    confidence : float
        ``1 − α`` of the decision.
    tolerance : float
        Relative slack ``tol`` of the decision.
    random_seed : int or Generator
        Seeds the bootstrap (elliptical-process laws).

    Returns
    -------
    WhiteBoxResult

    Raises
    ------
    ValueError
        An unknown law, or no usable draws.

    Examples
    --------
    Laplace noise at a third of the claimed scale on one coefficient (Δ = 1 in ℓ¹, ε = 1): the fitted law delivers
    ε = 3, and the test says so.

    >>> import numpy as np
    >>> from fdp_ppl.auditing.whitebox import NoiseClaim, whitebox_test
    >>> claim = NoiseClaim("laplace", "l1", np.ones(1), 1.0, 1.0, 0.0, centre=lambda d: np.zeros(1),
    ...                    coefficients=lambda X: X)
    >>> draws = np.random.default_rng(0).laplace(0.0, 1 / 3, size=(4000, 1))
    >>> result = whitebox_test(claim, [(None, draws)])
    >>> round(result.epsilon, 1), result.flagged
    (3.0, True)
    """
    if claim.law not in LAWS:
        raise ValueError(f"unknown noise law {claim.law!r}; use one of {LAWS}")
    rng = random_seed if isinstance(random_seed, np.random.Generator) else np.random.default_rng(random_seed)
    res = []
    for dataset, X in samples:
        X = np.asarray(X, float)
        X = X[~np.isnan(X).any(1)]
        if len(X):
            res.append(claim.coefficients(X) - claim.centre(dataset)[None, :])
    if not res:
        raise ValueError("no released draws to fit")
    R = np.concatenate(res)
    Delta = float(claim.sensitivity)
    reached = math.nan
    if pairs:
        obs = max(float(claim.norm_of(claim.centre(a) - claim.centre(b))) for a, b in pairs)
        reached = obs / Delta
        Delta = max(Delta, obs)
    w = claim.weights()
    if claim.law == "laplace":
        est, se, fit = _laplace(R, w, Delta, claim.epsilon, claim.delta)
    elif claim.law == "normal":
        est, se, fit = _normal(R, w, Delta, claim.epsilon, claim.delta)
    elif claim.law == "elliptical-process":
        est, se, fit = _elliptical_process(R, w, Delta, claim.epsilon, claim.delta, claim.kind, claim.nu, rng)
    else:
        est, se, fit = _elliptical_pure(R, w, Delta, claim.epsilon, claim.kind, claim.nu, R.shape[1])
    alpha = 1.0 - float(confidence)
    K = int(est.size)
    z = float(stats.norm.isf(alpha / K))
    lower = est - z * se
    k = int(np.nanargmax(lower))
    return WhiteBoxResult(epsilon=float(est[k]), standard_error=float(se[k]), lower=float(lower[k]), z=z,
                          flagged=bool(lower[k] > claim.epsilon * (1.0 + tolerance)), claimed=float(claim.epsilon),
                          delta=float(claim.delta), tolerance=float(tolerance), alpha=alpha, estimates=K,
                          sensitivity_claimed=float(claim.sensitivity), sensitivity_reached=float(reached),
                          releases=len(R), fit=fit)


#: the white-box method in one sentence (``attrs["whitebox_method"]`` of an audit)
WHITEBOX_METHOD = ("the noise law fitted from the audit's releases minus the non-private summaries of its synthetic "
                   "datasets (Laplace scales, Normal sds per coefficient; the mixing law of an elliptical process in "
                   "the generalised inverse Gaussian family from the whitened radii); the epsilon it implies (at the "
                   "claimed delta) for max(claimed sensitivity, the largest pair difference); flagged when "
                   "estimate - z se > epsilon (1 + tolerance), z Bonferroni over the estimates at alpha = 1 - "
                   "confidence")


__all__ = [
    "LAWS",
    "WHITEBOX_METHOD",
    "WHITEBOX_TOLERANCE",
    "NoiseClaim",
    "WhiteBoxResult",
    "epsilon_at_delta",
    "gaussian_epsilon",
    "gaussian_profile",
    "whitebox_test",
]
