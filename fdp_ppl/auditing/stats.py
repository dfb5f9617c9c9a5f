"""Statistics of the privacy audit: Clopper–Pearson bounds, ε lower bounds and event selection.

Numpy and scipy only. The audit (:func:`fdp_ppl.auditing.audit`) draws releases on both sides of a
neighbouring pair (D, D′), chooses events on a training half (:func:`select_events`) and counts them on a
held-out half; :func:`epsilon_lower_bound` turns the held-out counts into a lower bound on ε.

Sources
-------
* Clopper, C. J. & Pearson, E. S. (1934). The use of confidence or fiducial limits illustrated in the case
  of the binomial. *Biometrika* 26, 404–413 (exact one-sided binomial bounds, via the beta quantiles).
* Bichsel, B., Steffen, S., Bogunovic, I. & Vechev, M. (2021). DP-Sniper: black-box discovery of
  differential privacy violations using classifiers. *IEEE S&P 2021* (events as thresholds of a statistic
  chosen on one sample, probabilities estimated on another, ε = log of the ratio of the bounds).
* Google DP-Auditorium (2024), github.com/google/differential-privacy, ``python/dp_auditorium``
  (testers of (ε, δ) claims from samples of neighbouring outputs: ``log((p − δ)/q)``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

#: probabilities at which thresholds of a statistic are tried on the training half (both tails dense)
_PROBS = np.unique(np.concatenate([np.geomspace(2e-4, 0.5, 60), 1 - np.geomspace(2e-4, 0.5, 60)]))


def cp_lower(k, n, alpha: float) -> np.ndarray:
    """One-sided Clopper–Pearson lower bound of a binomial probability.

    Parameters
    ----------
    k, n : array_like of int
        Successes and trials (broadcast together), 0 ≤ k ≤ n, n ≥ 1.
    alpha : float
        Error probability of the bound: ``P(p < bound) ≤ alpha``.

    Returns
    -------
    ndarray
        ``Beta(alpha; k, n − k + 1)`` quantile; 0 where k = 0 (Clopper & Pearson 1934).
    """
    k, n = np.broadcast_arrays(np.asarray(k, float), np.asarray(n, float))
    with np.errstate(invalid="ignore"):
        out = stats.beta.ppf(alpha, np.maximum(k, 1e-300), n - k + 1)
    return np.where(k > 0, out, 0.0)


def cp_upper(k, n, alpha: float) -> np.ndarray:
    """One-sided Clopper–Pearson upper bound of a binomial probability (``1 − alpha`` quantile of
    ``Beta(k + 1, n − k)``; 1 where k = n). Same parameters as :func:`cp_lower`."""
    k, n = np.broadcast_arrays(np.asarray(k, float), np.asarray(n, float))
    with np.errstate(invalid="ignore"):
        out = stats.beta.ppf(1 - alpha, k + 1, np.maximum(n - k, 1e-300))
    return np.where(k < n, out, 1.0)


def epsilon_lower_bound(k_num, n_num, k_den, n_den, delta: float, alpha: float):
    """``log((p̂_lo(D) − δ) / p̂_hi(D′))`` from event counts on the two sides of a neighbouring pair.

    With probability at least ``1 − 2·alpha`` both bounds hold, and then an (ε, δ)-DP mechanism has
    ``ε ≥`` the returned value (``P(E | D) ≤ e^ε P(E | D′) + δ``).

    Parameters
    ----------
    k_num, n_num : array_like of int
        Count of the event and number of releases on the numerator side D.
    k_den, n_den : array_like of int
        The same on the denominator side D′.
    delta : float
        The claimed δ (0 for ε-DP).
    alpha : float
        Error probability of each one-sided Clopper–Pearson bound.

    Returns
    -------
    eps : ndarray
        The lower bound (``-inf`` where ``p̂_lo(D) ≤ δ``).
    p_lo, p_hi : ndarray
        The two bounds.
    """
    p_lo = cp_lower(k_num, n_num, alpha)
    p_hi = cp_upper(k_den, n_den, alpha)
    num = p_lo - float(delta)
    with np.errstate(divide="ignore", invalid="ignore"):
        eps = np.where(num > 0, np.log(np.maximum(num, 1e-300) / p_hi), -np.inf)
    return eps, p_lo, p_hi


# ----------------------------------------------------------------------------- statistics
@dataclass(frozen=True)
class Statistic:
    """A scalar statistic of released vectors, fitted on the training half.

    Attributes
    ----------
    name : str
        ``"fisher"`` (linear, Fisher/LDA direction), ``"laplace-lr"`` (sum of clipped coordinates: the
        log-likelihood ratio of independent Laplace coordinates), ``"coordinate j"`` (the coordinate with
        the largest standardised mean shift), ``"timing"`` or ``"identity"``.
    centre, weights, clip : ndarray, shape (d,)
    columns : ndarray of int
        The columns of the released vector it reads.
    """

    name: str
    centre: np.ndarray
    weights: np.ndarray
    clip: np.ndarray | None = None
    columns: np.ndarray | None = None

    def __call__(self, X) -> np.ndarray:
        """Values for released vectors ``X`` (shape (N, d)); NaN rows (failed releases) give NaN."""
        X = np.asarray(X, dtype=float)
        if X.ndim == 1:
            X = X[:, None]
        if self.columns is not None:
            X = X[:, self.columns]
        Z = X - self.centre
        if self.clip is None:
            return Z @ self.weights
        return np.sum(np.clip(Z * self.weights, -self.clip, self.clip), axis=1)


def fit_statistics(A, B, shrinkage: float = 0.1) -> list[Statistic]:
    """Statistics separating two samples of released vectors (training half only).

    Parameters
    ----------
    A, B : ndarray, shape (N_A, d), (N_B, d)
        Successful releases on each side (no NaN rows).
    shrinkage : float
        Covariance shrinkage γ: ``(1 − γ) S + γ diag(S)`` (S the pooled empirical covariance).

    Returns
    -------
    list of Statistic
        Fisher/LDA direction with the regularised covariance; the Laplace log-likelihood-ratio
        statistic ``Σ_j clip(2(x_j − m_j)/b_j, ±r_j)`` with ``b_j = sd_j/√2`` and ``r_j = |Δ_j|/b_j``
        (exact for independent Laplace coordinates); the single coordinate with the largest
        ``|Δ_j|/sd_j``. Empty when a side has fewer than 2 rows or no column varies.
    """
    A = np.asarray(A, dtype=float)
    B = np.asarray(B, dtype=float)
    if A.ndim == 1:
        A, B = A[:, None], B[:, None]
    if len(A) < 2 or len(B) < 2:
        return []
    pooled_sd = np.sqrt(0.5 * (A.var(0) + B.var(0)))
    cols = np.flatnonzero(pooled_sd > 1e-12 * max(float(np.max(np.abs(np.concatenate([A, B])))), 1e-300))
    if cols.size == 0:
        return []
    A, B, sd = A[:, cols], B[:, cols], pooled_sd[cols]
    mu_a, mu_b = A.mean(0), B.mean(0)
    diff = mu_a - mu_b
    mid = 0.5 * (mu_a + mu_b)
    out = []
    S = 0.5 * (np.cov(A, rowvar=False, ddof=1).reshape(cols.size, cols.size)
               + np.cov(B, rowvar=False, ddof=1).reshape(cols.size, cols.size))
    S = (1 - shrinkage) * S + shrinkage * np.diag(np.diag(S)) + 1e-12 * np.mean(np.diag(S)) * np.eye(cols.size)
    try:
        w = np.linalg.solve(S, diff)
        if np.all(np.isfinite(w)) and np.any(w != 0):
            out.append(Statistic("fisher", mid, w / np.max(np.abs(w)), None, cols))
    except np.linalg.LinAlgError:
        pass
    b = sd / np.sqrt(2.0)
    r = np.abs(diff) / b
    if np.any(r > 0):
        out.append(Statistic("laplace-lr", mid, 2.0 * np.sign(diff) / b, r, cols))
    j = int(np.argmax(np.abs(diff) / sd))
    one = np.zeros(cols.size)
    one[j] = 1.0
    out.append(Statistic(f"coordinate {int(cols[j])}", mid, one, None, cols))
    return out


@dataclass(frozen=True)
class Event:
    """An event on one release: ``kind`` in {"statistic", "failure", "timing"}.

    ``tail`` is ``">"``, ``"<"`` (value above / below ``threshold``) or ``"|>|"`` (``|value − centre| >
    threshold``, both tails); the failure event is "the release call raised".
    """

    kind: str
    statistic: Statistic | None = None
    tail: str = ">"
    threshold: float = 0.0
    centre: float = 0.0

    def indicator(self, values=None, failed=None, times=None) -> np.ndarray:
        """Boolean, shape (N,): whether each release is in the event (a failed release is only in the
        failure event and in timing events)."""
        if self.kind == "failure":
            return np.asarray(failed, bool)
        if self.kind == "timing":
            s = np.asarray(times, float)
        else:
            s = self.statistic(values)
        with np.errstate(invalid="ignore"):
            if self.tail == ">":
                hit = s > self.threshold
            elif self.tail == "<":
                hit = s < self.threshold
            else:
                hit = np.abs(s - self.centre) > self.threshold
        return np.where(np.isnan(s), False, hit)

    def describe(self, units: str = "") -> str:
        if self.kind == "failure":
            return "the release call raised an exception (failure)"
        name = "wall time of one release call [s]" if self.kind == "timing" else self.statistic.name
        if self.tail == "|>|":
            return f"|{name} - {self.centre:.4g}| > {self.threshold:.4g}"
        return f"{name} {self.tail} {self.threshold:.4g}"


def _tail_counts(sa, sb, thresholds, tail, centre=0.0):
    """Counts of ``s > c`` / ``s < c`` / ``|s − centre| > c`` for every threshold c (sorted search)."""
    if tail == "|>|":
        sa, sb = np.abs(sa - centre), np.abs(sb - centre)
    a, b = np.sort(sa), np.sort(sb)
    if tail == "<":
        return np.searchsorted(a, thresholds, "left"), np.searchsorted(b, thresholds, "left")
    return a.size - np.searchsorted(a, thresholds, "right"), b.size - np.searchsorted(b, thresholds, "right")


def best_threshold(sa, sb, n_a: int, n_b: int, delta: float, alpha: float, kind: str, statistic=None,
                   tails=(">", "<", "|>|")):
    """The event (tail and threshold of a statistic's values ``sa``, ``sb`` on the training half) with the
    largest training ε lower bound, for each direction.

    Parameters
    ----------
    sa, sb : ndarray, shape (N_A,), (N_B,)
        Finite values of the statistic on each side (successful releases only).
    n_a, n_b : int
        Number of releases on each side (including failed ones: the event's probability is per release).
    delta, alpha : float
        As in :func:`epsilon_lower_bound`.
    kind : {"statistic", "timing"}
    statistic : Statistic or None

    Returns
    -------
    dict
        ``{"A>B": (score, Event), "B>A": (score, Event)}``: A>B bounds ``P(E|A)/P(E|B)``.
    """
    best = {"A>B": (-np.inf, None), "B>A": (-np.inf, None)}
    pooled = np.concatenate([sa, sb])
    if pooled.size == 0:
        return best
    centre = float(np.median(pooled))
    for tail in tails:
        base = np.abs(pooled - centre) if tail == "|>|" else pooled
        thresholds = np.unique(np.quantile(base, _PROBS))
        ka, kb = _tail_counts(sa, sb, thresholds, tail, centre)
        for key, (kn, nn, kd, nd) in (("A>B", (ka, n_a, kb, n_b)), ("B>A", (kb, n_b, ka, n_a))):
            eps, _, _ = epsilon_lower_bound(kn, nn, kd, nd, delta, alpha)
            i = int(np.argmax(eps))
            if eps[i] > best[key][0]:
                best[key] = (float(eps[i]), Event(kind, statistic, tail, float(thresholds[i]), centre))
    return best


__all__ = ["cp_lower", "cp_upper", "epsilon_lower_bound", "Statistic", "fit_statistics", "Event",
           "best_threshold"]
