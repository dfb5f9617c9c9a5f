"""Builders that several test files share (one copy each): the checkout's root, the environment of a child
process, tiny curves on a public grid and labelled points for kernel machines. Import as ``from tests.helpers
import ...`` (``tests`` is a package; the root ``conftest.py`` holds the fixtures)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import xarray as xr

#: the root of the checkout (README, notebooks, benchmarks, models)
REPO = Path(__file__).resolve().parents[1]


def child_env() -> dict:
    """The environment of a child ``python`` that imports this checkout's ``fdp_ppl`` (CVM, no display)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    env.setdefault("PYTENSOR_FLAGS", "mode=CVM")
    env["MPLBACKEND"] = "Agg"
    return env


def family_curves(n: int, K: int, seed: int = 0) -> xr.DataArray:
    """``n`` smooth curves on ``K`` equispaced points of [0, 1] (dims ``("curve", "t")``), seeded."""
    rng = np.random.default_rng(seed)
    t = np.linspace(0, 1, K)
    values = np.sin(2 * np.pi * t)[None] + 0.3 * rng.standard_normal((n, 1)) * np.cos(np.pi * t)[None]
    return xr.DataArray(values, dims=("curve", "t"), coords={"t": t})


def labelled_points(n: int, d: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` points uniform on [0, 1]^d, shape (n, d), with labels ±1 from a noisy threshold on the first feature."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(0, 1, (n, d))
    y = np.where(X[:, 0] + 0.3 * rng.standard_normal(n) > 0.5, 1.0, -1.0)
    return X, y


def readme_growth_release(seed: int = 11):
    """The README's growth release: ICLP-QR mean (Matérn ν = 3/2, ρ = 0.1; τ = 40 cm, n = 93) about the public CDC
    reference, released with the ICLP at ε = 1 as a seeded study (seed warnings silenced)."""
    import warnings

    import fdp_ppl as fp
    from fdp_ppl.datasets import growth_reference, load_dataset

    curves = load_dataset("growth")
    reference = growth_reference(curves["t"].values)
    basis = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), fp.Grid.from_points(curves["t"].values))
    summary = fp.ICLPQRSpec(basis=basis, tau=40.0, n=93).fit(curves, offset=reference, offset_source="CDC 2000")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fp.SeededReleaseWarning)
        return fp.release(summary, fp.ICLP(epsilon=1.0), random_seed=seed, study=True)
