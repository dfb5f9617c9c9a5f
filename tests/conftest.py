import os

os.environ.setdefault("PYTENSOR_FLAGS", "mode=CVM")
os.environ.setdefault("MPLBACKEND", "Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

FAST = os.environ.get("FDP_PPL_FAST", "0") == "1"
SLOW = os.environ.get("FDP_PPL_SLOW", "0") == "1"


def pytest_addoption(parser):
    parser.addoption("--runslow", action="store_true", default=False, help="run tests marked slow")


def pytest_collection_modifyitems(config, items):
    if config.getoption("--runslow") or SLOW:
        return
    skip = pytest.mark.skip(reason="slow statistical test: run with --runslow or FDP_PPL_SLOW=1")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def rng():
    return np.random.default_rng(20261122)


@pytest.fixture(scope="session")
def small_grid():
    import fdp_ppl as fp

    return fp.Grid.uniform(60)


@pytest.fixture(scope="session")
def matern_basis(small_grid):
    import fdp_ppl as fp

    return fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), small_grid)


@pytest.fixture
def curves(small_grid, rng):
    """n = 40 rough curves around a smooth mean, some with norm above tau = 1."""
    t = small_grid.t
    mean = np.sin(2 * np.pi * t) * 0.6
    return mean + 0.5 * rng.standard_normal((40, t.size)) * (1 + rng.random((40, 1)))
