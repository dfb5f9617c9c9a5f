"""The toy family's public spec, fit, mechanism and its two release hooks (plan: public, no data; draw)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import xarray as xr


@dataclass(frozen=True)
class ScalarMeanSpec:
    """The mean of n public-count records clipped to [lo, hi]: sensitivity (hi - lo) / n (replace one)."""

    lo: float
    hi: float
    n: int

    def fit(self, x) -> "ScalarMeanFit":
        return ScalarMeanFit(self, float(np.mean(np.clip(np.asarray(x, dtype=float), self.lo, self.hi))))


@dataclass(frozen=True)
class ScalarMeanFit:
    spec: ScalarMeanSpec
    value: float  # private: only the draw hook reads it


@dataclass(frozen=True)
class ScalarLaplace:
    epsilon: float


def plan_release(spec_or_fit, mechanism, *, draws: int = 1, seeded: bool = False):
    from fdp_ppl.accounting import PrivacyBudget, PrivacyEvent
    from fdp_ppl.releasing.plans import ReleasePlan, check_draws
    from fdp_ppl.releasing.schema import family_attrs

    spec = getattr(spec_or_fit, "spec", spec_or_fit)
    draws, _ = check_draws(draws, 1)
    eps, sensitivity = float(mechanism.epsilon), (spec.hi - spec.lo) / spec.n
    return ReleasePlan(
        family="toy", mechanism="scalar-laplace", noise_law="laplace", epsilon=eps, delta=0.0, draws=draws,
        sensitivity=sensitivity, sensitivity_norm="absolute value", noise_scale=np.array([sensitivity / eps]),
        noise_multiplier=1.0 / eps, event=PrivacyEvent("laplace", eps, 0.0, noise_multiplier=1.0 / eps, count=draws),
        cost=PrivacyBudget(eps * draws, 0.0), privacy_unit="record", neighbouring="replace-one record; n public",
        guarantee=f"{eps:g}-DP per draw for replace-one record; n public", fp_safe=False, certified=True,
        seeded=seeded, generator="numpy", output={"chain": 1, "draw": draws}, memory_bytes=8.0 * draws,
        label="toy scalar-mean release", variable="mean", units="data units",
        attrs={"lo": spec.lo, "hi": spec.hi, "n": spec.n, **family_attrs("toy")})


def draw_release(fit: ScalarMeanFit, plan, *, random_seed=None, progressbar: bool = False) -> xr.DataTree:
    noise = np.random.default_rng(random_seed).laplace(0.0, plan.noise_scale[0], (1, plan.draws))
    post = xr.Dataset({"mean": (("chain", "draw"), fit.value + noise)},
                      coords={"chain": [0], "draw": np.arange(plan.draws)})
    return xr.DataTree.from_dict({"posterior": post})


def infer_release(release, prior, *, random_seed=None):
    """Flat prior: the posterior of the true mean is the release minus Laplace noise of the recorded scale."""
    at = release.attrs
    b = (at["hi"] - at["lo"]) / at["n"] / at["epsilon"]
    value = float(release["posterior"]["mean"].values.ravel()[0])
    draws = value - np.random.default_rng(random_seed).laplace(0.0, b, (1, 200))
    return xr.DataTree.from_dict({"posterior": xr.Dataset({"mean": (("chain", "draw"), draws)})})
