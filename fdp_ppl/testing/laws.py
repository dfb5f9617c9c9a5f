"""``check_law``: every property a noise law of :mod:`fdp_ppl.noise.laws` promises, checked in one call.

In the spirit of ``pymc.testing.check_logp``: a user who adds a :class:`~fdp_ppl.noise.laws.NoiseLaw` calls
:func:`check_law` from their own tests (``tests/testing/test_kit.py`` calls it for every registered law). For
each public scale vector (one J each) it checks

(a) **the log-density**: numpy ``logp`` against an independent reference (scipy where scipy has the law, a
    closed form otherwise, or the ``reference=`` you pass), the PyTensor path (``xp=backend("pt")``, compiled)
    and PyMC's own ``pm.logp`` of ``law.pymc(..., observed=y)``; ``pointwise=True`` sums to the joint; the
    density integrates to one;
(b) **the draws**: the compiled release sampler (``sampler_for(law, J, "pymc")``, the graph of ``law.rv``) and
    ``pm.draw`` of ``law.pymc(...)`` pass a Kolmogorov–Smirnov test per coordinate (and, for joint laws, of the
    whitened radius) against the CDF integrated from ``logp``, at a family-wise level ``alpha`` (Bonferroni over
    the tests); ``variance`` equals the variance integrated from ``logp`` and the sample variance within 5
    standard errors ``sqrt((m₄ − m₂²)/n)`` (where the fourth moment is finite), and is ``inf`` exactly where
    the tails of ``logp`` say the variance does not exist;
(c) **the privacy loss**: ``privacy_loss(y, c, c', s) = logp(y, c, s) − logp(y, c', s)`` (the loss of the
    release ``y`` for the dataset whose summary is ``c`` against its neighbour ``c'``), and its supremum over
    ``y`` equals the ε the law states for a shift ``c − c'`` (Laplace: ``Σ_j |c_j − c'_j|/b_j``, Lin &
    Reimherr 2026, Theorem 8; elliptical laws: the closed form of their family at the Mahalanobis shift
    ``‖(c − c')/s‖₂``, Reimherr & Awan 2019, Theorem 3), and is never exceeded.

Each failure raises ``AssertionError`` with one line naming the law, the property and by how much it failed.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from collections.abc import Callable

import numpy as np

from ..errors import InputError

#: family-wise level of the Kolmogorov–Smirnov tests of one :func:`check_law` call
ALPHA = 1e-3
#: tolerances of the log-density comparisons (numpy against PyTensor / PyMC, and against the reference)
RTOL, ATOL = 1e-9, 1e-9
REF_RTOL, REF_ATOL = 1e-8, 1e-8
#: the sample variance may differ from ``law.variance`` by this many standard errors
N_SE = 5.0
#: public scale vectors of :func:`check_law` by default: J = 1 and J = 3
DEFAULT_SCALES = ((0.7,), (0.3, 1.0, 2.5))
#: whitened values up to this size are integrated (CDF, mass, variance); beyond, a power-law tail is added
_REACH = 1e12


# ---------------------------------------------------------------------------------------------------- report
@dataclass
class LawReport:
    """What :func:`check_law` checked, and the margins it found.

    Attributes
    ----------
    law : str
        ``law.name``.
    passed : list of str
        The properties checked (one entry per property and J).
    skipped : list of str
        Properties that do not apply, with the reason (e.g. no stated ε for the Normal law).
    min_ks_pvalue : float
        Smallest Kolmogorov–Smirnov p-value over the draws' tests (each passed at ``alpha / n_tests``).
    max_logp_error : float
        Largest relative disagreement of numpy ``logp`` with the reference, PyTensor and PyMC.
    epsilon : dict
        ``{J: (stated ε, supremum of the privacy loss found)}`` for a unit shift.
    """

    law: str
    passed: list = field(default_factory=list)
    skipped: list = field(default_factory=list)
    min_ks_pvalue: float = 1.0
    max_logp_error: float = 0.0
    epsilon: dict = field(default_factory=dict)


def _fail(law, what: str) -> None:
    raise AssertionError(f"{law.name}: {what}")


# ---------------------------------------------------------------------------------------------------- references
def _knorm_logpdf(y, mu, s):
    """The ℓ² K-norm density ``exp(−‖z‖₂) Γ(J/2 + 1) / (π^{J/2} J!)`` of the whitened ``z = (y − μ)/s``
    (Hardt & Talwar 2010): closed form, independent of :mod:`fdp_ppl.noise.elliptical.families`."""
    from scipy import special

    J = y.shape[-1]
    z = (y - mu) / s
    log_c = special.gammaln(J / 2 + 1) - J / 2 * math.log(math.pi) - special.gammaln(J + 1)
    return log_c - np.sqrt(np.sum(z * z, axis=-1)) - np.sum(np.log(s))


def reference_logp(law) -> Callable | None:
    """An independent log-density of ``law``: ``f(y (N, J), mu (J,), scale (J,)) -> (N,)``, or None.

    scipy for Laplace, Normal, and the elliptical t, Gaussian and (J = 1) Laplace laws; the closed-form ℓ²
    K-norm density for the elliptical K-norm law. Chosen by ``law.name`` (the law's declared identity), so a
    subclass that keeps the name is held to the same density.
    """
    from scipy import stats

    key = law.name.split("(")[0]
    if key == "laplace":
        # scipy's laplace.logpdf is computed through the density; gennorm(β = 1) is the same law in log form
        return lambda y, mu, s: np.sum(stats.gennorm.logpdf(y, 1.0, mu, s), axis=-1)
    if key == "normal":
        return lambda y, mu, s: np.sum(stats.norm.logpdf(y, mu, s), axis=-1)
    if key == "elliptical-t":
        return lambda y, mu, s: np.atleast_1d(stats.multivariate_t(loc=mu, shape=np.diag(s**2),
                                                                   df=law.nu).logpdf(y))
    if key == "elliptical-gaussian":
        return lambda y, mu, s: np.atleast_1d(stats.multivariate_normal(mean=mu, cov=np.diag(s**2)).logpdf(y))
    if key == "elliptical-laplace":  # the univariate member is a Laplace law with variance s² (b = s/√2)
        return lambda y, mu, s: (stats.gennorm.logpdf(y[:, 0], 1.0, mu[0], s[0] / math.sqrt(2.0))
                                 if y.shape[-1] == 1 else None)
    if key == "elliptical-knorm":
        return _knorm_logpdf
    return None


def stated_epsilon(law, shift, scale) -> float | None:
    """The ε-DP level ``law`` states for centres ``shift = c − c'`` apart at public ``scale`` (both (J,)).

    Laplace: ``Σ_j |shift_j|/b_j`` (the ℓ¹ shift in units of b; Lin & Reimherr 2026, Theorem 8). Elliptical:
    ``family(J).epsilon_closed_form(‖shift/scale‖₂)`` (Reimherr & Awan 2019, Theorem 3, corrected; ``inf``
    for the J >= 2 Laplace process). None where the law states no ε (Normal and Gaussian noise give
    (ε, δ)-DP only) or where the kit does not know the law (pass ``epsilon=`` to :func:`check_law`).
    """
    from ..noise.laws import Elliptical, Laplace

    shift = np.asarray(shift, dtype=float)
    scale = np.asarray(scale, dtype=float)
    if isinstance(law, Laplace) and law.name == "laplace":
        return float(np.sum(np.abs(shift) / scale))
    if isinstance(law, Elliptical):
        eps = law.family(shift.size).epsilon_closed_form(float(np.linalg.norm(shift / scale)))
        return None if eps is None else float(eps)
    return None


def _sensitivity_unit(law, direction, scale) -> np.ndarray:
    """``direction`` (whitened, (J,)) scaled to a unit shift in the law's sensitivity norm: ℓ¹ of
    ``shift/scale`` for product laws, ℓ² (Mahalanobis) for joint laws."""
    d = np.asarray(direction, dtype=float)
    norm = np.sum(np.abs(d)) if law.product else np.linalg.norm(d)
    return d / norm * scale


# ---------------------------------------------------------------------------------------------------- helpers
def _check_scales(scales) -> list[np.ndarray]:
    if isinstance(scales, np.ndarray) and scales.ndim == 1:
        scales = [scales]
    out = []
    for s in scales:
        s = np.asarray(s, dtype=float)
        if s.ndim != 1 or s.size < 1 or not (np.all(np.isfinite(s)) and np.all(s > 0)):
            raise InputError(f"each scale must be a vector (J,) of finite values > 0, got {s!r}",
                             "pass e.g. scales=[np.array([0.5, 1.0, 4.0])]")
        out.append(s)
    if not out:
        raise InputError("check_law needs at least one scale vector", "pass e.g. scales=[np.ones(3)]")
    return out


def _grid(rng, scale):
    """Values × centres for one scale: a list of ``(y (N, J), mu (J,))`` (the centre itself is a value)."""
    J = scale.size
    z = rng.standard_normal((24, J)) * 10.0 ** rng.uniform(-2.0, 2.0, (24, 1))
    z = np.concatenate([np.zeros((1, J)), z, 3.0 * np.eye(J), -40.0 * np.eye(J)[:1], np.full((1, J), 0.7)])
    centres = [np.zeros(J), rng.uniform(-2.0, 2.0, J), np.full(J, 40.0)]
    return [(mu + z * scale, mu) for mu in centres]


def _rel_err(a, b) -> float:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    both = np.isfinite(a) & np.isfinite(b)
    if np.any((a != b) & ~both):  # inf against a finite value, or nan
        return math.inf
    if not np.any(both):
        return 0.0
    return float(np.max(np.abs(a[both] - b[both]) / (1.0 + np.abs(b[both]))))


def _compare(law, what, got, want, rtol, atol, report):
    got, want = np.asarray(got, dtype=float), np.asarray(want, dtype=float)
    if got.shape != want.shape:
        _fail(law, f"{what}: shape {got.shape}, expected {want.shape}")
    err = _rel_err(got, want)
    report.max_logp_error = max(report.max_logp_error, err)
    same_inf = np.array_equal(~np.isfinite(got), ~np.isfinite(want)) and np.array_equal(got[~np.isfinite(got)],
                                                                                          want[~np.isfinite(want)])
    fin = np.isfinite(got) & np.isfinite(want)
    bad = np.abs(got[fin] - want[fin]) > atol + rtol * np.abs(want[fin])
    if not same_inf or np.any(bad):
        i = int(np.argmax(np.abs(got[fin] - want[fin]))) if np.any(fin) else 0
        worst = (f"max |difference| {np.max(np.abs(got[fin] - want[fin])):.3g} at a log-density of "
                 f"{want[fin].ravel()[i]:.6g}") if np.any(fin) else "non-finite values differ"
        _fail(law, f"{what}: {worst} (rtol {rtol:g}, atol {atol:g})")


def _tail_slope(logf, big=1e6, bigger=1e8) -> float:
    """Exponent k of a density's power-law tail, ``log f(x) ≈ k log x`` (−inf-like for lighter tails)."""
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        a, b = float(logf(np.array([big]))[0]), float(logf(np.array([bigger]))[0])
    if not np.isfinite(b):
        return -math.inf
    return (b - a) / math.log(bigger / big)


def _moment_exists(m: float, slope: float) -> bool:
    """``∫^∞ x^m x^slope dx < ∞`` (with a margin: a boundary case counts as infinite)."""
    return m + slope < -1.0 - 1e-6


def _integral(x, f, slope, two_sided: bool = False):
    """``∫ f`` over the increasing grid ``x`` by the trapezoid rule, plus the power-law tail beyond ``x[-1]``
    (and before ``x[0]`` if ``two_sided``): ``f(x) ≈ f(x_end) (x/x_end)^slope``, slope < −1.

    Returns
    -------
    cum : ndarray
        The cumulative trapezoid integral on the grid (no tails).
    total : float
        The integral with the tails (``inf`` when the tail does not decay fast enough).
    """
    f = np.nan_to_num(np.asarray(f, dtype=float), nan=0.0, posinf=0.0)
    cum = np.concatenate([[0.0], np.cumsum(0.5 * (f[1:] + f[:-1]) * np.diff(x))])

    def tail(fx, xe):
        if fx == 0.0 or not np.isfinite(slope):
            return 0.0
        return fx * abs(xe) / -(slope + 1.0) if slope < -1.0 else math.inf

    total = cum[-1] + tail(f[-1], x[-1]) + (tail(f[0], x[0]) if two_sided else 0.0)
    return cum, float(total)


# ---------------------------------------------------------------------------------------------------- (a) logp
def _compiled_logp(law, J):
    import pytensor
    import pytensor.tensor as pt

    from .._backend import backend
    from ..settings import compile_mode

    PT = backend("pt")
    y, mu, s = (pt.matrix(n, shape=(None, J)) for n in ("y", "mu", "scale"))
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*BLAS.*")
        return pytensor.function([y, mu, s], [law.logp(y, mu, s, xp=PT), law.logp(y, mu, s, xp=PT, pointwise=True)],
                                 mode=compile_mode())


def _pymc_logp(law, y, mu, s):
    """``pm.logp`` of ``law.pymc(..., observed=y)``: elementwise (N, J) or joint (N,)."""
    import pymc as pm

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*BLAS.*")
        with pm.Model():
            rv = law.pymc("released", mu, s, observed=y)
        return np.asarray(pm.logp(rv, y).eval())


def _check_logp(law, scale, rng, reference, report):
    J = scale.size
    groups = _grid(rng, scale)
    y = np.concatenate([g[0] for g in groups])
    mu = np.concatenate([np.tile(g[1], (len(g[0]), 1)) for g in groups])
    s = np.tile(scale, (len(y), 1))
    lp = np.asarray(law.logp(y, mu, scale), dtype=float)
    lpp = np.asarray(law.logp(y, mu, scale, pointwise=True), dtype=float)
    if lp.shape != (len(y),):
        _fail(law, f"logp of values (N, J) = {y.shape} has shape {lp.shape}, expected ({len(y)},)")
    if np.any(np.isnan(lp)) or (law.product and np.any(lp == np.inf)):
        _fail(law, f"logp is nan or +inf at {int(np.sum(np.isnan(lp) | (lp == np.inf)))} of {len(y)} values")
    _compare(law, f"logp(pointwise=True).sum(-1) against the joint logp (J={J})", lpp.sum(-1), lp, 1e-12, 1e-12,
             report)
    # the independent reference, one centre at a time
    ref = reference_logp(law) if reference is None else reference
    checked = False
    if ref is not None:
        start = 0
        for yg, mg in groups:
            want = ref(yg, mg, scale)
            got = lp[start:start + len(yg)]
            start += len(yg)
            if want is None:
                continue
            _compare(law, f"logp against the reference density (J={J})", got, want, REF_RTOL, REF_ATOL, report)
            checked = True
    if checked:
        report.passed.append(f"logp = reference (J={J})")
    else:
        report.skipped.append(f"logp against a reference (J={J}): no independent density known; pass reference=")
    # the same formula in PyTensor, and PyMC's own log-probability of the law's variable
    pt_joint, pt_point = _compiled_logp(law, J)(y, mu, s)
    _compare(law, f"PyTensor logp (xp=backend('pt')) against numpy (J={J})", pt_joint, lp, RTOL, ATOL, report)
    _compare(law, f"PyTensor logp(pointwise=True) against numpy (J={J})", pt_point, lpp, RTOL, ATOL, report)
    pm_lp = _pymc_logp(law, y, mu, scale)
    _compare(law, f"pm.logp of law.pymc(..., observed=y) against numpy (J={J})",
             pm_lp.sum(-1) if pm_lp.shape == y.shape else pm_lp, lp, RTOL, ATOL, report)
    report.passed.append(f"logp numpy = PyTensor = pm.logp (J={J})")


# ---------------------------------------------------------------------------------------------------- marginals
def _unit_sphere_cdf(u, J):
    """``P(U₁ <= u)`` for the first coordinate of a uniform direction in R^J."""
    from scipy import special

    u = np.clip(u, -1.0, 1.0)
    if J == 1:
        return np.where(u < 1.0, np.where(u < -1.0, 0.0, 0.5), 1.0)
    return special.betainc((J - 1) / 2, (J - 1) / 2, (u + 1.0) / 2.0)


class _Marginals:
    """CDFs, total mass, second moments and tail exponents of the law at one scale, integrated from ``logp``.

    Product laws: the density of coordinate j is ``logp(pointwise=True)[..., j]``. Joint laws (``product =
    False``) are assumed spherical in whitened coordinates (elliptical, as every joint law of the package): the
    whitened radius has density ``|S^{J−1}| r^{J−1} p(r e₁)`` and a coordinate is the radius times the first
    coordinate of a uniform direction.
    """

    def __init__(self, law, scale):
        from ..noise.elliptical.families import log_sphere_area

        self.law, self.scale, self.J = law, scale, scale.size
        J = self.J
        self.r = np.geomspace(1e-10, _REACH, 3000)
        with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
            if law.product:
                self.x = np.concatenate([-self.r[::-1], [0.0], self.r])
                logf = [self._coordinate_logf(j) for j in range(J)]
                self.pdf = [np.exp(f(self.x)) for f in logf]
                # the heavier of the two tails
                self.slopes = [max(_tail_slope(f), _tail_slope(lambda v, f=f: f(-v))) for f in logf]
            else:
                e1 = np.eye(J)[0]
                log_area = log_sphere_area(J)

                def radius_logf(r):
                    lp = np.asarray(law.logp(r[:, None] * e1 * scale, np.zeros(J), scale), dtype=float)
                    return log_area + (J - 1) * np.log(r) + np.sum(np.log(scale)) + lp

                self.radius_pdf = np.exp(radius_logf(self.r))
                self.radius_slope = _tail_slope(radius_logf)
                self.slopes = [self.radius_slope] * J

    def _coordinate_logf(self, j):
        """Log-density of the standardised coordinate ``(y_j − c_j)/s_j`` (product laws)."""
        law, s, J = self.law, self.scale, self.J

        def logf(v):
            y = np.zeros((v.size, J))
            y[:, j] = v * s[j]
            return np.asarray(law.logp(y, np.zeros(J), s, pointwise=True), dtype=float)[:, j] + math.log(s[j])

        return logf

    def masses(self) -> list[float]:
        """Total mass of each coordinate's density (product) or of the radius' density (joint)."""
        if self.law.product:
            return [_integral(self.x, p, k, two_sided=True)[1] for p, k in zip(self.pdf, self.slopes)]
        return [_integral(self.r, self.radius_pdf, self.radius_slope)[1]]

    def coordinate_cdf(self, j) -> Callable:
        """CDF of the standardised coordinate j (interpolated on the grid)."""
        if self.law.product:
            cum, total = _integral(self.x, self.pdf[j], self.slopes[j], two_sided=True)
            F = cum + (total - cum[-1]) / 2.0  # the mass beyond the grid, half in each tail
            return lambda v, x=self.x: np.interp(v, x, F)
        if not hasattr(self, "_coordinate"):
            # P(R U <= x) for x > 0 = sum over radii of P(U <= x / r): the grid's radii, plus those below the
            # grid (all <= x: probability 1) and above it (x/r ~ 0: probability 1/2)
            r, p = self.r, np.nan_to_num(self.radius_pdf, posinf=0.0)
            w = np.zeros_like(r)
            w[1:] += 0.5 * p[1:] * np.diff(r)
            w[:-1] += 0.5 * p[:-1] * np.diff(r)
            above = _integral(r, p, self.radius_slope)[1] - float(np.sum(w))
            below = max(1.0 - float(np.sum(w)) - above, 0.0)
            xs = np.geomspace(1e-9, _REACH, 1200)
            F = np.array([np.sum(w * _unit_sphere_cdf(x / r, self.J)) for x in xs]) + below + 0.5 * above
            self._coordinate = (np.concatenate([-xs[::-1], [0.0], xs]), np.concatenate([1.0 - F[::-1], [0.5], F]))
        x, F = self._coordinate
        return lambda v: np.interp(v, x, F)

    def radius_cdf(self) -> Callable:
        """CDF of the whitened radius ``‖(y − c)/scale‖₂`` (joint laws)."""
        cum, _ = _integral(self.r, self.radius_pdf, self.radius_slope)
        return lambda v, r=self.r: np.interp(v, r, cum)

    def second_moments(self) -> np.ndarray:
        """``E[z_j²]`` of each standardised coordinate (inf where it does not exist)."""
        if self.law.product:
            return np.array([_integral(self.x, self.x**2 * p, k + 2, two_sided=True)[1] if _moment_exists(2, k)
                             else math.inf for p, k in zip(self.pdf, self.slopes)])
        k = self.radius_slope
        if not _moment_exists(2, k):
            return np.full(self.J, math.inf)
        return np.full(self.J, _integral(self.r, self.r**2 * self.radius_pdf, k + 2)[1] / self.J)


# ---------------------------------------------------------------------------------------------------- (b) draws
def _draws(law, centre, scale, n, seeds):
    import pymc as pm

    from ..noise.sampling import sampler_for

    out = {"compiled sampler": sampler_for(law, scale.size, "pymc").draw(centre, scale, n, random_seed=seeds[0],
                                                                         study=True)}
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*BLAS.*")
        with pm.Model():  # n i.i.d. released vectors as one variable of shape (n, J): one call, not n
            v = law.pymc("released", centre, scale, shape=(n, scale.size))
        out["pm.draw(law.pymc)"] = np.asarray(pm.draw(v, random_seed=seeds[1]), dtype=float)
    return out


def _check_mass_and_variance(law, scale, marg, report):
    J = scale.size
    for j, mass in enumerate(marg.masses()):
        if not abs(mass - 1.0) <= 1e-3:
            where = f"coordinate {j}" if law.product else "the radius"
            _fail(law, f"the density does not integrate to one (J={J}): {where} has mass {mass:.6g}")
    report.passed.append(f"density integrates to one (J={J})")
    var = np.asarray(law.variance(scale), dtype=float)
    if var.shape != (J,):
        _fail(law, f"variance(scale) has shape {var.shape}, expected ({J},)")
    integrated = marg.second_moments() * scale**2
    for j in range(J):
        if np.isinf(integrated[j]) != np.isinf(var[j]):
            _fail(law, f"variance of coordinate {j} (J={J}) is {var[j]:.6g} but the tails of logp decay like "
                       f"|x|^{marg.slopes[j]:.3f}, so it is {'infinite' if np.isinf(integrated[j]) else 'finite'}")
        if np.isfinite(var[j]) and not abs(var[j] / integrated[j] - 1.0) <= 1e-3:
            _fail(law, f"variance of coordinate {j} (J={J}) is {var[j]:.6g} but logp integrates to "
                       f"{integrated[j]:.6g} (ratio {var[j] / integrated[j]:.4f})")
    report.passed.append(f"variance = integral of logp (J={J})")
    return var


def _check_draws(law, scale, rng, n_draws, alpha_each, samplers, marg, var, report):
    from scipy import stats

    J = scale.size
    centre = rng.uniform(-2.0, 2.0, J) * scale
    seeds = rng.integers(2**31, size=2)
    draws = _draws(law, centre, scale, n_draws, seeds)
    draws = {k: v for k, v in draws.items() if k in samplers}
    slopes = marg.slopes
    for source, d in draws.items():
        if d.shape != (n_draws, J):
            _fail(law, f"{source} returned shape {d.shape}, expected ({n_draws}, {J})")
        z = (d - centre) / scale
        for j in range(J):
            res = stats.kstest(z[:, j], marg.coordinate_cdf(j))
            report.min_ks_pvalue = min(report.min_ks_pvalue, float(res.pvalue))
            if not res.pvalue >= alpha_each:
                _fail(law, f"draws of the {source} do not follow logp in coordinate {j} (J={J}): Kolmogorov-Smirnov "
                           f"D = {res.statistic:.4f}, p = {res.pvalue:.2g} < {alpha_each:.2g}")
        if not law.product:
            res = stats.kstest(np.linalg.norm(z, axis=1), marg.radius_cdf())
            report.min_ks_pvalue = min(report.min_ks_pvalue, float(res.pvalue))
            if not res.pvalue >= alpha_each:
                _fail(law, f"draws of the {source} do not follow logp in their whitened radius (J={J}): "
                           f"Kolmogorov-Smirnov D = {res.statistic:.4f}, p = {res.pvalue:.2g} < {alpha_each:.2g}")
        # mean and variance within N_SE standard errors, where the moments behind the errors exist
        for j in range(J):
            x = d[:, j]
            if np.isfinite(var[j]):
                se_mean = math.sqrt(var[j] / n_draws)
                if not abs(x.mean() - centre[j]) <= N_SE * se_mean:
                    _fail(law, f"draws of the {source}, coordinate {j} (J={J}): mean {x.mean():.6g} is "
                               f"{abs(x.mean() - centre[j]) / se_mean:.1f} standard errors from the centre {centre[j]:.6g}")
            if np.isfinite(var[j]) and _moment_exists(4, slopes[j]):
                m2 = float(np.mean((x - x.mean()) ** 2))
                m4 = float(np.mean((x - x.mean()) ** 4))
                se = math.sqrt(max(m4 - m2 * m2, 0.0) / n_draws)
                if not abs(m2 - var[j]) <= N_SE * se:
                    _fail(law, f"variance of coordinate {j} (J={J}) is {var[j]:.6g} but the {source} draws have "
                               f"{m2:.6g} ({abs(m2 - var[j]) / se:.1f} standard errors, ratio {var[j] / m2:.4f})")
    report.passed.append(f"draws follow logp, mean and variance (J={J}; {', '.join(draws)})")
    if any(not _moment_exists(4, k) for k in slopes):
        report.skipped.append(f"sample variance (J={J}): the fourth moment is infinite (tails |x|^{min(slopes):.3f})")


# ---------------------------------------------------------------------------------------------------- (c) privacy loss
def _sup_privacy_loss(law, c, cp, s, rng, sweeps):
    """Supremum over y of ``privacy_loss(y, c, cp, s)``: the line through the centres, then coordinate sweeps
    (exact for product laws, whose loss is a sum over coordinates) each refined by a bounded 1-D search."""
    from scipy import optimize

    J = c.size
    u = np.concatenate([-np.geomspace(1e5, 1e-7, 160), [0.0], np.geomspace(1e-7, 1e5, 160)])
    line = c[None] + u[:, None] * (c - cp)[None]
    extra = c[None] + s * rng.standard_normal((64, J)) * 10.0 ** rng.uniform(-2, 2, (64, 1))
    cand = np.concatenate([line, extra, c[None], cp[None]])
    with np.errstate(all="ignore"):
        loss = np.asarray(law.privacy_loss(cand, c, cp, s), dtype=float)
    if np.any(np.isnan(loss)):
        _fail(law, f"privacy_loss is nan at {int(np.sum(np.isnan(loss)))} of {len(cand)} values")
    best = int(np.argmax(loss))
    y, top = cand[best].copy(), float(loss[best])
    if not np.isfinite(top):
        return top
    for _ in range(sweeps):
        for j in range(J):
            vals = np.unique(np.concatenate([c[j] + s[j] * u, cp[j] + s[j] * u, [y[j]]]))
            Y = np.tile(y, (vals.size, 1))
            Y[:, j] = vals
            with np.errstate(all="ignore"):
                lj = np.asarray(law.privacy_loss(Y, c, cp, s), dtype=float)
            k = int(np.nanargmax(lj))
            if lj[k] > top:
                y[j], top = vals[k], float(lj[k])
            if not np.isfinite(top):
                return top
            # the grids around c and c' nearly coincide in places: bracket by three points on each side
            lo, hi = vals[max(k - 3, 0)], vals[min(k + 3, vals.size - 1)]
            if hi > lo:
                def neg(v, j=j):
                    yy = y.copy()
                    yy[j] = v
                    return -float(law.privacy_loss(yy, c, cp, s))
                res = optimize.minimize_scalar(neg, bounds=(lo, hi), method="bounded",
                                               options={"xatol": 1e-12 * max(1.0, abs(lo), abs(hi))})
                if -res.fun > top:
                    y[j], top = float(res.x), float(-res.fun)
    return top


def _check_privacy_loss(law, scale, rng, epsilon, report):
    J = scale.size
    groups = _grid(rng, scale)
    y = np.concatenate([g[0] for g in groups])
    c = rng.uniform(-2.0, 2.0, J) * scale
    for cp in (c + rng.standard_normal(J) * scale, c + 1e-3 * scale, c - 5.0 * scale):
        loss = np.asarray(law.privacy_loss(y, c, cp, scale), dtype=float)
        if loss.shape != (len(y),):
            _fail(law, f"privacy_loss of values (N, J) = {y.shape} has shape {loss.shape}, expected ({len(y)},)")
        with np.errstate(invalid="ignore"):
            a, b = np.asarray(law.logp(y, c, scale)), np.asarray(law.logp(y, cp, scale))
            diff = a - b
        ok = np.isfinite(a) & np.isfinite(b)
        tol = 1e-9 * (1.0 + np.abs(a[ok]) + np.abs(b[ok]))
        if np.any(np.abs(loss[ok] - diff[ok]) > tol):
            i = int(np.argmax(np.abs(loss[ok] - diff[ok]) - tol))
            sign = " (the sign is flipped: it is logp(y, c') - logp(y, c))" if np.allclose(loss[ok], -diff[ok]) else ""
            _fail(law, f"privacy_loss(y, c, c', s) differs from logp(y, c) - logp(y, c') by "
                       f"{abs(loss[ok][i] - diff[ok][i]):.3g} (J={J}){sign}")
        zero = np.asarray(law.privacy_loss(y, c, c, scale), dtype=float)
        if np.any(np.abs(zero[np.isfinite(zero)]) > 1e-12):
            _fail(law, f"privacy_loss(y, c, c, s) is not 0 (up to {np.max(np.abs(zero)):.3g}) (J={J})")
    report.passed.append(f"privacy_loss = logp(y, c) - logp(y, c') (J={J})")
    if epsilon is None:
        report.skipped.append(f"supremum of the privacy loss (J={J}): the law states no ε")
        return
    directions = [np.ones(J), np.eye(J)[0], rng.standard_normal(J), rng.standard_normal(J)]
    stated_any = False
    for m, direction in enumerate(directions):
        for size in ((1.0, 0.3, 3.0) if m == 0 else (1.0,)):
            shift = size * _sensitivity_unit(law, direction, scale)
            eps = epsilon(shift, scale)
            if eps is None:
                continue
            stated_any = True
            sup = _sup_privacy_loss(law, c, c - shift, scale, rng, sweeps=1 if law.product else 2)
            if m == 0 and size == 1.0:
                report.epsilon[J] = (float(eps), float(sup))
            if math.isinf(eps):
                if not sup > 50.0:
                    _fail(law, f"the stated ε is infinite but the privacy loss stays at {sup:.6g} (J={J})")
                continue
            if sup > eps * (1 + 1e-9) + 1e-12:
                _fail(law, f"privacy loss {sup:.9g} exceeds the stated ε = {eps:.9g} by {sup - eps:.3g} for a shift "
                           f"of size {size:g} in the sensitivity norm (J={J})")
            if not sup >= eps * (1 - 1e-6) - 1e-12:
                _fail(law, f"supremum of the privacy loss {sup:.9g} falls short of the stated ε = {eps:.9g} by "
                           f"{eps - sup:.3g} for a shift of size {size:g} in the sensitivity norm (J={J})")
    if stated_any:
        report.passed.append(f"sup_y privacy_loss = stated ε (J={J})")
    else:
        report.skipped.append(f"supremum of the privacy loss (J={J}): the law states no ε")


# ---------------------------------------------------------------------------------------------------- entry point
def check_law(law, *, scales=DEFAULT_SCALES, n_draws: int = 4000,
              random_seed=0, alpha: float = ALPHA, reference: Callable | None = None,
              epsilon: Callable | str | None = "stated",
              samplers: tuple[str, ...] = ("compiled sampler", "pm.draw(law.pymc)")) -> LawReport:
    """Check that a noise law keeps every promise of :class:`~fdp_ppl.noise.laws.NoiseLaw` (see the module
    docstring: (a) log-density, (b) draws and variance, (c) privacy loss and its supremum).

    Parameters
    ----------
    law : NoiseLaw
        The law under test, e.g. ``Laplace()`` or ``Elliptical("t", nu=3)``.
    scales : sequence of array_like, each shape (J,)
        Public scale vectors; every property is checked at each (one J per vector; default
        :data:`DEFAULT_SCALES`, J = 1 and 3).
    n_draws : int
        Draws per sampler and scale for the Kolmogorov–Smirnov and moment tests.
    random_seed : int
        Seeds the test points, the centres and both samplers: a call is deterministic.
    alpha : float
        Family-wise level of the Kolmogorov–Smirnov tests of the call (each test at ``alpha / n_tests``).
    reference : callable, optional
        ``reference(y (N, J), mu (J,), scale (J,)) -> (N,)``: an independent log-density. Default
        :func:`reference_logp` (scipy or a closed form for the package's laws; none for an unknown law).
    epsilon : "stated", callable or None
        The ε-DP level the law claims for centres ``shift = c − c'`` apart: ``epsilon(shift (J,), scale (J,))
        -> float`` (``inf`` for none). ``"stated"``: :func:`stated_epsilon`; None: check only the identity
        ``privacy_loss = logp(y, c) − logp(y, c')``.
    samplers : tuple of str
        Which draws to test: ``"compiled sampler"`` (``sampler_for(law, J, "pymc")``, the release path) and/or
        ``"pm.draw(law.pymc)"`` (the PyMC variable inference uses).

    Returns
    -------
    LawReport
        The properties passed and skipped, the smallest KS p-value, the largest log-density error, and the
        stated ε against the supremum found.

    Raises
    ------
    AssertionError
        A property fails; the one-line message names the law, the property and the margin.
    InputError
        ``law`` is not a NoiseLaw, or a scale vector is not finite and > 0.

    Notes
    -----
    Joint laws (``law.product = False``) are assumed spherical in whitened coordinates ``(y − c)/scale``
    (elliptical, as every joint law of the package): their coordinate CDFs are built from the radius.
    Heavy tails are handled: the variance is checked to be ``inf`` exactly where the tails of ``logp`` make
    it infinite, and the sample variance is compared only where the fourth moment exists.
    Cost: two PyTensor compilations and two samplers per J (about a second each once PyTensor's cache is
    warm; the first compilation of a new graph takes several seconds).

    Examples
    --------
    >>> import numpy as np
    >>> from fdp_ppl.noise.laws import Laplace
    >>> from fdp_ppl.testing import check_law
    >>> report = check_law(Laplace(), scales=[np.array([0.5, 2.0])], n_draws=2000)
    >>> stated, found = report.epsilon[2]    # a shift of ℓ1 norm 1 in units of b: ε = 1, attained
    >>> stated, round(found, 6)
    (1.0, 1.0)
    """
    from ..noise.laws import NoiseLaw

    if not isinstance(law, NoiseLaw):
        raise InputError(f"check_law needs a NoiseLaw, got {type(law).__name__}",
                         "pass e.g. fdp_ppl.noise.laws.Laplace()")
    scales = _check_scales(scales)
    samplers = tuple(samplers)
    known = ("compiled sampler", "pm.draw(law.pymc)")
    if not set(samplers) <= set(known):
        raise InputError(f"unknown samplers {sorted(set(samplers) - set(known))}", f"use some of {known}")
    if epsilon == "stated":
        def epsilon(shift, scale):
            return stated_epsilon(law, shift, scale)
    elif epsilon is not None and not callable(epsilon):
        raise InputError(f"epsilon must be 'stated', a callable or None, got {epsilon!r}",
                         "pass epsilon=lambda shift, scale: ...")
    rng = np.random.default_rng(random_seed)
    n_ks = sum(len(samplers) * (s.size + (0 if law.product else 1)) for s in scales)
    alpha_each = alpha / max(n_ks, 1)
    report = LawReport(law=law.name)
    for scale in scales:
        _check_logp(law, scale, rng, reference, report)
        marg = _Marginals(law, scale)
        var = _check_mass_and_variance(law, scale, marg, report)
        if samplers:
            _check_draws(law, scale, rng, int(n_draws), alpha_each, samplers, marg, var, report)
        _check_privacy_loss(law, scale, rng, epsilon, report)
    return report


__all__ = ["check_law", "LawReport", "reference_logp", "stated_epsilon"]
