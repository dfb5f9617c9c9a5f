"""``check_family``: a release family keeps its public plan (no data), charges it, records it and survives a file.

For anyone adding a family: the plan made from the public spec alone must be the plan of the fit, the
ledger must be charged exactly ``plan.cost`` with ``plan.event``, the release must record ``plan.attrs``
unchanged and have the dims ``plan.output`` states, and the file must read back to the same attributes.
"""

from __future__ import annotations

import math
import warnings

import numpy as np


def _equal(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, (np.ndarray, list, tuple)) or isinstance(b, (np.ndarray, list, tuple)):
        return np.array_equal(np.asarray(a), np.asarray(b))
    return a == b


def check_family(fitted, mechanism, *, spec=None, draws: int = 2, random_seed=None, tmp_path=None, plan_options=None,
                 **options):
    """Assert that a family's release follows its public plan.

    Parameters
    ----------
    fitted
        A fitted object of a registered family (``LinearSummary``, ``KDESummary``, ``ERMFit``, ``FPCAFit``).
    mechanism
        A mechanism the family accepts.
    spec : optional
        The public spec to plan from without data (default ``fitted.spec``).
    draws : int
        Draws of the checked release.
    random_seed : optional
        A seed for the release (a study: ``study=True`` is implied, the plans are made with ``seeded=True`` and no
        ledger is charged, so the charge is checked only for an unseeded release); None: fresh OS entropy.
    tmp_path : path-like, optional
        A folder for the netCDF round trip (skipped when None).
    plan_options : dict, optional
        Options only the spec's plan needs (``n`` for an FPCA spec).
    **options
        Family options for both the plan and the release (``chains``, ``bound``, ``generator``, ``study``...).

    Returns
    -------
    (ReleasePlan, xr.DataTree)
        The plan and the release it described.

    Raises
    ------
    AssertionError
        The plan from the spec differs from the fit's; the ledger was charged something else; an attribute of
        the plan is missing or different in the release or the file; the released variable's dims, coordinates or
        units differ from the plan's.

    Examples
    --------
    >>> import fdp_ppl as fp
    >>> from fdp_ppl.testing.family import check_family
    >>> curves = fp.datasets.load_dataset("growth")
    >>> basis = fp.eigenbasis(fp.Matern(rho=0.1, nu=1.5), fp.Grid.from_points(curves["t"].values))
    >>> plan, tree = check_family(fp.iclp_qr_mean(curves, basis, tau=200.0), fp.ICLP(1.0))
    >>> plan.cost.epsilon
    2.0
    """
    import fdp_ppl as fp
    from fdp_ppl.accounting import PrivacyBudget, PrivacyLedger

    spec = fitted.spec if spec is None else spec
    seeded = random_seed is not None
    study = bool(options.pop("study", False)) or seeded
    public = fp.plan(spec, mechanism, draws=draws, seeded=seeded, study=study, **options, **(plan_options or {}))
    of_fit = fp.plan(fitted, mechanism, draws=draws, seeded=seeded, study=study, **options)
    assert dict(public.attrs).keys() == dict(of_fit.attrs).keys(), "the spec's plan and the fit's differ in attrs"
    for key, value in public.attrs.items():
        assert _equal(value, of_fit.attrs[key]), f"plan attr {key}: spec {value!r} != fit {of_fit.attrs[key]!r}"
    assert public.cost == of_fit.cost and public.event == of_fit.event, "the spec's plan and the fit's cost differ"
    ledger = None if study else PrivacyLedger(PrivacyBudget(1e6, 0.5))  # a study is charged to no ledger
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tree = fp.release(fitted, mechanism, draws=draws, ledger=ledger, random_seed=random_seed, study=study,
                          **options)
    if ledger is not None:
        assert math.isclose(ledger.spent.epsilon, public.cost.epsilon, rel_tol=1e-12), \
            f"charged epsilon {ledger.spent.epsilon} != planned {public.cost.epsilon}"
        assert math.isclose(ledger.spent.delta, public.cost.delta, rel_tol=1e-12, abs_tol=1e-300), \
            f"charged delta {ledger.spent.delta} != planned {public.cost.delta}"
        events = [e for e in ledger.events if e is not None]
        if public.event is not None:
            assert events and events[-1] == public.event, f"recorded event {events[-1:]} != planned {public.event}"
    assert ("study" in tree.attrs) == study, "a study release must be marked a study, a real one must not"
    for key, value in public.attrs.items():
        assert key in tree.attrs, f"the release does not record plan attr {key}"
        assert _equal(value, tree.attrs[key]), f"release attr {key}: {tree.attrs[key]!r} != planned {value!r}"
    post = tree["posterior"]
    assert public.variable in post.data_vars, f"the release has no planned variable {public.variable!r}"
    released = post[public.variable]
    assert dict(zip(released.dims, released.shape)) == dict(public.output), \
        f"{public.variable} has dims {dict(zip(released.dims, released.shape))}, planned {dict(public.output)}"
    for dim, values in public.coords.items():
        got = np.asarray(released[dim].values)
        assert got.shape == values.shape and np.array_equal(got, values), f"coordinate {dim} differs from the plan's"
    assert not public.units or released.attrs.get("units") == public.units, \
        f"{public.variable} units {released.attrs.get('units')!r} != planned {public.units!r}"
    if tmp_path is not None:
        import xarray as xr

        path = f"{tmp_path}/release-{public.family}.nc"
        tree.to_netcdf(path, engine="h5netcdf")
        with xr.open_datatree(path, engine="h5netcdf") as back:
            for key, value in tree.attrs.items():
                assert _equal(value, back.attrs[key]), f"attr {key} changed through netCDF: {back.attrs[key]!r}"
    return public, tree


__all__ = ["check_family"]
