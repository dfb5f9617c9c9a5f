"""Models of the people from private releases: does a sex effect in mean height survive the privacy noise?

The Berkeley growth data (:func:`fdp_ppl.datasets.load_dataset` ``"growth"``: 39 boys, 54 girls, height in cm at
31 ages from 1 to 18 years). One RKHS mean release per sex (Gaussian mechanism, :data:`EPSILON`, public τ), each
observed in a PyMC population model by :func:`fdp_ppl.observe`; two population models of the mean curve compared by
``az.compare`` from the releases alone:

* ``sex_effect``: each sex has its own mean curve (Legendre polynomial of degree
  :data:`DEGREE` in age);
* ``no_sex_effect``: one mean curve for both.

The covariance of one child's curve is fixed and public (:data:`AMPLITUDE` cm, Matérn-3/2 in age with lengthscale
:data:`LENGTHSCALE` years; a prior guess, not fitted to data). Beside it the non-private comparison: the same models
with the same likelihood of the sample means' coefficients ``N(S A μ, S A K Aᵀ S / n)``, fitted to the non-private
coefficients without noise. :func:`run` prints both tables and whether the rankings agree.

The leave-one-out terms are per released coefficient (31 per sex; non-factorised, Bürkner, Gabry & Vehtari 2021),
summed over both releases into one pointwise vector of 62 terms per draw before ``az.compare``.

With ``--joint`` (``run(joint=True)``) each sex also has an ε-DP FPCA release (Bingham, k = 1, :data:`COMPONENTS_M`
Fourier functions, the same τ and ε), observed with its mean release by ``fp.observe([mean, components])`` (latent
sample mean and scatter; ``clipping="auto"`` chooses ``"moments"`` here). Its leave-one-out terms
(:data:`JOINT_LOG_LIKELIHOOD`, ``population_result``'s default) have the latent statistics integrated out given the
population: ``log p(y_j | y_-j, θ)`` per mean coefficient and ``log p(v | y, θ)`` per frame (Monte Carlo, 256 public
draws). Result (seed 20261127, 2 × 300 draws, re-run 2026-11-28 with the integrated terms): the joint releases still
cannot tell a sex effect from none — ``no_sex_effect`` first by 0.8 elpd (``dse`` 1.4; elpd −192.7 against −193.6)
— while the non-private means prefer the sex effect (difference 15, ``dse`` 15): **the private ranking does not
agree** with the non-private one, as from the mean releases alone (0.2, ``dse`` 1.1). The integrated terms change
nothing here: the conditional terms of the previous default give the same elpd to 0.01, as the exact Gaussian
analogue predicts where the sampling sd of the released statistics is small against the noise (39 and 54 children,
ε = 1; ``benchmarks/bench_records_loo.py --joint``, sampling/noise sd 0.2); the Monte Carlo standard error of each
frame term is at most 0.003 nats, and the frame's information about the sample mean that the mean terms leave out
(``log_likelihood="joint"``, on 20 draws of the sex-effect fit) adds 0.0004 nats in all. About 9 CPU minutes for the
sex-effect joint fit and 3 for the other (2024 and 808 s wall on a 2-core machine at load 7); the integrated terms
about 70 CPU seconds per model.

Run: ``python -m notebooks.studies.population_growth`` (about a minute; ``--joint``: 15 CPU minutes or more).
"""

from __future__ import annotations

import warnings

import numpy as np
import xarray as xr

#: privacy budget of each sex's release (the sexes are disjoint: parallel composition)
EPSILON = 1.0
DELTA = 1e-3
#: public bound on a child's height curve's norm (cm, the grid's L² norm; heights stay below 200 cm, so the
#: data are not clipped; the margin keeps the fitted population's share beyond τ small)
TAU = 250.0
#: the population covariance's public amplitude (cm) and lengthscale (years)
AMPLITUDE, LENGTHSCALE = 8.0, 4.0
SEXES = ("male", "female")
DRAWS, TUNE, CHAINS = 300, 300, 2
#: ``run(joint=True)``: per sex also an ε-DP FPCA release (Bingham, k = 1, this many Fourier functions on the age grid,
#: the same τ and ε), observed with the mean release by ``fp.observe([mean, components])`` (latent sample mean and
#: scatter shared by both; fdp_ppl/inference/population_joint.py)
COMPONENTS_M = 4
#: ``run(joint=True)``: the joint releases' pointwise log-likelihood (``population_result(log_likelihood=)``): the latent
#: sample mean and scatter integrated out given the population (the default; ``"joint"`` also conditions each mean
#: term on the frame, 32 times the Monte Carlo cost here; ``"conditional"``, the terms given the latents, is optimistic)
JOINT_LOG_LIKELIHOOD = "integrated"


def _kernel(age):
    d = np.abs(age[:, None] - age[None, :])
    r = np.sqrt(3.0) * d / LENGTHSCALE
    return AMPLITUDE**2 * (1 + r) * np.exp(-r) + 1e-6 * np.eye(age.size)


#: degree of the public Legendre design of the mean curve in age
DEGREE = 6


def _design(age):
    """A public Legendre design of degree :data:`DEGREE` in age (scaled to [-1, 1])."""
    s = (age - age.mean()) / (0.5 * (age.max() - age.min()))
    return np.polynomial.legendre.legvander(s, DEGREE)


def releases(seed: int = 20261127, components: bool = False):
    """One RKHS mean release per sex (Gaussian mechanism), and the non-private coefficients beside them."""
    import fdp_ppl as fp
    from fdp_ppl.inference.infer import _shrinkage
    from fdp_ppl.releasing import schema as S

    curves = fp.datasets.load_dataset("growth")
    basis = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), fp.Grid.from_points(curves["t"].values))
    out = {}
    for k, sex in enumerate(SEXES):
        group = curves.where(curves["sex"] == sex, drop=True)
        summary = fp.rkhs_mean(group, basis, tau=TAU)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", fp.SeededReleaseWarning)
            tree = fp.release(summary, fp.GaussianMechanism(EPSILON, DELTA), random_seed=seed + k, study=True)
        view = S.read_release(tree)
        design = _shrinkage(view)[:, None] * view.grid_to_coefficients()
        offset = 0.0 if view.public_offset is None else np.asarray(view.public_offset)
        out[sex] = {"tree": tree, "n": int(view.metadata.n), "design": design,
                    "nonprivate": design @ (group.mean("curve").values - offset), "offset": offset}
        if components:
            from fdp_ppl.fpca import FPCASpec

            spec = FPCASpec(grid=basis.grid, m=COMPONENTS_M, k=1, epsilon=EPSILON, tau=TAU)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", fp.SeededReleaseWarning)
                out[sex]["components"] = fp.release(spec.fit(group.transpose("curve", ...).values),
                                                    fp.ExponentialMechanism(), random_seed=seed + 10 + k, study=True)
    return curves["t"].values, out


def _loo_tree(idata, terms, attrs=None):
    post = idata["posterior"]
    ll = xr.Dataset({"heights": (("chain", "draw", "coefficient"), terms)},
                    coords={"chain": post["chain"], "draw": post["draw"]})
    tree = xr.DataTree.from_dict({"posterior": post.to_dataset(), "log_likelihood": ll})
    tree.attrs = dict(attrs or {})
    return tree


def fit(age, rel, sex_effect: bool, private: bool, seed: int = 1, joint: bool = False):
    """NUTS on the mean curves' Legendre coefficients; the result with one pointwise log-likelihood (both sexes)."""
    import pymc as pm

    import fdp_ppl as fp
    from fdp_ppl.inference.comparison import gaussian_loo

    X, K = _design(age), _kernel(age)
    scale = np.r_[150.0, 50.0, np.full(DEGREE - 1, 20.0)]   # weakly informative, in cm
    with pm.Model() as model:
        if sex_effect:
            beta = {sex: pm.Normal(f"beta_{sex}", 0.0, scale, shape=DEGREE + 1) for sex in SEXES}
        else:
            shared = pm.Normal("beta", 0.0, scale, shape=DEGREE + 1)
            beta = dict.fromkeys(SEXES, shared)
        for sex in SEXES:
            r = rel[sex]
            mean = pm.math.dot(X, beta[sex])
            if private:
                fp.observe([r["tree"], r["components"]] if joint else r["tree"], mean=mean, covariance=K, name=sex)
            else:
                C = r["design"] @ K @ r["design"].T / r["n"] + 1e-8 * np.eye(len(r["nonprivate"]))
                pm.MvNormal(sex, mu=pm.math.dot(r["design"], mean - r["offset"]), cov=C, observed=r["nonprivate"])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            idata = pm.sample(DRAWS, tune=TUNE, chains=CHAINS, cores=1, random_seed=seed, progressbar=False,
                              compute_convergence_checks=False)
        if private:
            res = fp.inference.population_result(idata, model, log_likelihood=JOINT_LOG_LIKELIHOOD)
            names = [v for sex in SEXES for v in ((f"{sex}_mean", f"{sex}_components") if joint else (sex,))]
            terms = np.concatenate([res["log_likelihood"][v].values for v in names], axis=-1)
            return _loo_tree(res, terms, {k: v for k, v in res.attrs.items() if "mc_se" in k or "correction" in k})
    post = idata["posterior"]
    terms = []
    for sex in SEXES:
        r = rel[sex]
        b = post[f"beta_{sex}" if sex_effect else "beta"].values            # (chain, draw, DEGREE + 1)
        C = r["design"] @ K @ r["design"].T / r["n"] + 1e-8 * np.eye(len(r["nonprivate"]))
        means = (b @ X.T - r["offset"]) @ r["design"].T
        terms.append(np.stack([[gaussian_loo(r["nonprivate"], m, C) for m in chain] for chain in means]))
    return _loo_tree(idata, np.concatenate(terms, axis=-1))


def run(seed: int = 20261127, joint: bool = False) -> dict:
    """Both comparisons; returns the two tables and whether their rankings agree. ``joint``: the private models
    observe each sex's mean and components releases together (the non-private side is unchanged: the sample means)."""
    import arviz as az

    age, rel = releases(seed, components=joint)
    tables, elpd = {}, {}
    for private in (True, False):
        fits = {name: fit(age, rel, sex_effect=flag, private=private, joint=joint and private)
                for name, flag in (("sex_effect", True), ("no_sex_effect", False))}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            key = "private" if private else "non-private"
            tables[key] = az.compare(fits)
            elpd[key] = {name: float(az.loo(f).elpd) for name, f in fits.items()}
    ranking = {k: list(t.index) for k, t in tables.items()}
    return {"tables": tables, "elpd": elpd, "agree": ranking["private"] == ranking["non-private"], "ranking": ranking}


if __name__ == "__main__":
    import sys

    out = run(joint="--joint" in sys.argv)
    for key, table in out["tables"].items():
        print(f"--- {key} ({f'released means, epsilon = {EPSILON:g} per sex' if key == 'private' else 'no noise'})")
        print(table[["elpd_diff", "dse"]])
        print("elpd (unrounded):", {k: round(v, 2) for k, v in out["elpd"][key].items()})
    print("rankings agree:", out["agree"], out["ranking"])
