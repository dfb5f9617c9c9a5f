"""Exact posterior draws with parameters shared by every draw (a fixed prior).

Where every posterior draw has the same one-dimensional posterior (fixed hyperparameters: the summary target, or a
public sampling sd), the Laplace law computes each coefficient's Normal–Laplace terms once and draws every row from
them. What is checked: the draws are bit-identical, for a fixed seed, to the draws from the same parameters stored
row by row (the per-element path, whose law ``test_exact.py`` checks against quadrature), below and above the
law's block size; and the inference helper marks rows as shared only where they are equal.
"""

from __future__ import annotations

import numpy as np
import pytest

from fdp_ppl.inference.conditional import _shared_rows
from fdp_ppl.noise.laws import Laplace, Normal
from fdp_ppl.noise.laws import _normal_laplace as nl
from fdp_ppl.noise.laws.base import BLOCK


@pytest.mark.parametrize("rows", [7, 3 * BLOCK // 50])   # one block; several blocks of the law's evaluation
def test_shared_rows_draw_bit_identical_to_rows_stored_apart(rows, monkeypatch):
    J = 50
    rng = np.random.default_rng(3)
    y = rng.laplace(0.0, 1.0, J) * np.geomspace(1.0, 1e-3, J)
    b = np.geomspace(0.05, 2.0, J)             # noise scales from far below to far above the prior's
    centre = rng.normal(0.0, 0.1, J)
    sd = np.geomspace(1.0, 1e-4, J)
    shared = [np.broadcast_to(v, (rows, J)) for v in (centre, sd)]
    apart = [np.array(v) for v in shared]      # the same numbers, each row stored
    assert all(v.strides[0] == 0 for v in shared) and all(v.strides[0] != 0 for v in apart)
    seen = []
    if nl.HAVE_KERNELS:   # compiled: the terms are the posterior_terms kernel's, or fused into posterior_draws
        run = nl.run

        def spy(kernel, *arrays, **kwargs):
            if kernel in (nl.posterior_terms, nl.posterior_draws):
                seen.append(np.shape(arrays[0] if kernel is nl.posterior_terms else arrays[2]))
            return run(kernel, *arrays, **kwargs)
        monkeypatch.setattr(nl, "run", spy)
    else:
        terms = Laplace._normal_terms

        def spy(x, g, bb, *args, **kwargs):
            seen.append(np.shape(x))
            return terms(x, g, bb, *args, **kwargs)
        monkeypatch.setattr(Laplace, "_normal_terms", staticmethod(spy))
    got = Laplace().centre_posterior_draws(y, b, Normal(), *shared, np.random.default_rng(11))
    assert seen == [(1, J)]                     # the terms once, for one row
    ref = Laplace().centre_posterior_draws(y, b, Normal(), *apart, np.random.default_rng(11))
    assert sum(s[0] for s in seen[1:]) == rows  # the terms of every row
    assert got.shape == (rows, J) and np.all(np.isfinite(got))
    np.testing.assert_array_equal(got, ref)
    assert np.ptp(got, axis=0).min() > 0        # each row its own draw, not one draw repeated


def test_shared_rows_only_where_every_row_is_equal():
    a = np.tile(np.arange(4.0), (5, 1))
    view = _shared_rows(a)
    assert view.strides[0] == 0 and np.array_equal(view, a)
    b = a.copy()
    b[3, 2] += 1e-12
    assert _shared_rows(b) is b
    one = a[:1]
    assert _shared_rows(one) is one
