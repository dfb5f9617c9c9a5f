"""The public lattice and the flush of tiny values: no subnormal number survives, values move by less than the
quantum, norms never grow (DESIGN invariant 9: run time is covered)."""

import numpy as np

from fdp_ppl.io.lattice import LATTICE_BITS, TINY, flush_tiny, to_lattice

SUBNORMAL = np.finfo(float).tiny


def _subnormal(a):
    a = np.abs(np.asarray(a))
    return int(np.sum((a > 0) & (a < SUBNORMAL)))


def test_lattice_rounds_towards_zero_and_removes_tiny_values():
    rng = np.random.default_rng(0)
    x = np.r_[rng.uniform(-1, 1, 1000), 1e-160, -5e-324, 1e-310, 0.0, 1.0, -1.0]
    out = to_lattice(x, 1.0)
    q = 2.0**-LATTICE_BITS
    assert np.all(np.abs(out) <= np.abs(x)) and np.all(np.abs(x - out) < q)
    assert np.all(out / q == np.trunc(out / q))
    assert np.all((out == 0) | (np.abs(out) >= q))
    assert _subnormal(out) == 0 and _subnormal(np.outer(out, out)) == 0
    assert np.all(out[-6:-2] == 0)
    assert x[-1] == -1.0  # the input is not changed


def test_sums_of_lattice_products_are_never_subnormal():
    """Cancellation cannot produce a subnormal: every non-zero sum of products of lattice values is at least
    2^-52 q² (module docstring), here checked on adversarial near-cancelling rows."""
    rng = np.random.default_rng(1)
    C = to_lattice(rng.uniform(-1, 1, (200, 6)) * 2.0**-30, 1.0)
    C[1] = -C[0] + to_lattice(np.full(6, 2.0**-40), 1.0)
    G = C.T @ C
    assert _subnormal(G) == 0
    assert np.min(np.abs(G[G != 0])) >= 2.0**-52 * 2.0**(-2 * LATTICE_BITS)


def test_flush_tiny():
    x = np.array([1e-300, -5e-324, TINY * 0.5, TINY, 0.3])
    assert flush_tiny(x).tolist() == [0.0, 0.0, 0.0, TINY, 0.3]
    y = x.copy()
    out = flush_tiny(y, 1.0, out=y)
    assert out is y and _subnormal(y) == 0
    assert flush_tiny(x, scale=1e-200).tolist()[0] == 1e-300  # relative to a public scale
