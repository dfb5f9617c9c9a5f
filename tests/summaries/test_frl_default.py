"""The FRL summary's default M works at every n: the PSS upper end ``floor(n^{1/3})`` capped at the retained pairs."""

import numpy as np
import pytest

import fdp_ppl as fp
from fdp_ppl.errors import InputError
from fdp_ppl.kde.baselines import FRLKDESpec, frl_kde_spec


def test_default_m_is_capped_at_the_retained_pairs():
    basis = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), fp.Grid.uniform(50), n_components=20)
    assert 1 <= fp.FRLSpec(basis=basis, tau=1.0, n=1000).M < 20      # the PSS upper end, below the cap
    assert fp.FRLSpec(basis=basis, tau=1.0, n=3 * 10**6).M == 20     # about 144 > 20 retained pairs: all of them
    with pytest.raises(InputError, match="M must lie"):               # an explicit M is still checked
        fp.FRLSpec(basis=basis, tau=1.0, n=3 * 10**6, M=144)


def test_frl_kde_defaults_work_at_large_n():
    pts = np.linspace(0.0, 1.0, 200)
    one = frl_kde_spec(pts, 0.05, 3 * 10**6)
    assert one.M == one.basis.size < 144
    grid = fp.spaces.CartesianGrid.uniform((0.0, 1.0), 200)
    spec = FRLKDESpec(grid=grid, bandwidth=0.05, n=3 * 10**6)
    assert spec.M == spec.n_components < 144
    small = FRLKDESpec(grid=grid, bandwidth=0.05, n=1000)
    assert small.M == 10 and small.n_components == 10
    # the truncated copy leaves the cached public eigenbasis whole
    assert fp.kde.KDESpec(grid=grid, bandwidth=0.05, n=1000).n_components == spec.M
