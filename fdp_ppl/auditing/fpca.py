"""The principal-components family's audit hook (``fdp-ppl fpca``, names ``FORM/SAMPLER``): the exponential mechanism
on the issue's design (30-point grid, Gaussian-kernel eigenbasis, m = 5, k = 1) or the caller's spec, with curves along
one eigenfunction against one replaced by another as candidate neighbours; the released subspace's features.
"""

from __future__ import annotations

import numpy as np

from ..errors import InputError
from ..releasing.families import BY_NAME
from .._names import FPCA_MECHANISMS
from .hooks import AuditHook, NoSeedWarning, Pair, Target

#: default releases per side of the FPCA audits (its exact samplers use a fixed, large proposal budget per frame)
FPCA_SAMPLES = 1000
#: frames per fp.release call of an FPCA fit when the audit draws many (each call is one exact batch of the sampler)
FPCA_CHUNK = 100
_FPCA_SPEC = ("the issue's design: 30-point uniform grid, Gaussian kernel exp(-d^2/rho) eigenbasis with rho = 1, "
              "m = 5, k = 1, tau = 1, n = 28 curves, default Sigma (operator eigenvalues)")


def fpca_name(name: str) -> str:
    """An FPCA mechanism name with its sampler (``"gp-base"`` -> ``"gp-base/exact"``)."""
    return f"{name}/exact" if name in ("gp-base", "bingham") else name


def _fpca_keys(mechanism: str, spec_given: bool = False) -> tuple[str, ...] | None:
    name = fpca_name(mechanism)
    if name not in FPCA_MECHANISMS:
        return None
    return ("n",) if name.endswith(("/exact", "/sequential")) else ("n", "iterations")


def fpca_issue_design(epsilon: float = 1.0, form: str = "gp-base"):
    """The issue's FPCA design and its 5th-vs-1st neighbouring pair.

    Returns
    -------
    spec : FPCASpec
        30-point grid, Gaussian kernel ``exp(−d²/ρ)`` eigenbasis with ρ = 1, m = 5, k = 1, τ = 1.
    first, second : ndarray, shape (28, 30)
        28 curves along the 5th eigenfunction; the same with one curve replaced by the 1st.
    """
    from ..fpca import FPCASpec
    from ..spaces import Grid, eigenbasis, kernel_from_name

    grid = Grid.uniform(30)
    basis = eigenbasis(kernel_from_name("gaussian", 1.0), grid)
    spec = FPCASpec(grid=grid, m=5, k=1, epsilon=float(epsilon), tau=1.0, basis=basis, form=form)
    phi = np.asarray(basis.eigenfunctions)
    first = np.tile(phi[:, 4], (28, 1))
    second = first.copy()
    second[0] = phi[:, 0]
    return spec, first, second


def frame_features(frames) -> np.ndarray:
    """Upper triangle of the projection ``V Vᵀ`` of each released frame (sign and rotation free).

    Parameters
    ----------
    frames : ndarray, shape (N, m, k)

    Returns
    -------
    ndarray, shape (N, m (m + 1) / 2)
    """
    V = np.asarray(frames, float)
    P = np.einsum("nik,njk->nij", V, V)
    iu = np.triu_indices(V.shape[1])
    return P[:, iu[0], iu[1]]


def _fpca_target(name, epsilon, delta, options, spec=None):
    import fdp_ppl as fp

    name = fpca_name(name)
    if name not in FPCA_MECHANISMS:
        raise InputError(f"unknown mechanism {name!r} of family 'fpca'",
                         f"choose one of {', '.join(FPCA_MECHANISMS)} (FORM/SAMPLER)")
    form, sampler = name.split("/")
    opts = dict(options or {})
    if spec is None:
        spec, d5, d51 = fpca_issue_design(epsilon, form)
        spec_text = _FPCA_SPEC
    else:
        from ..fpca import FPCASpec

        if not isinstance(spec, FPCASpec) or spec.form != form:
            raise InputError(f"mechanism {name!r} needs an FPCASpec with form={form!r}",
                             f"pass spec=FPCASpec(..., form={form!r}) or omit spec for the issue's design")
        spec_text = f"user spec {spec!r}"
    phi = np.asarray(spec.basis_values) * spec.tau
    n = int(opts.get("n", 28))
    if spec.m < 2:
        raise InputError("the FPCA audit needs m >= 2 basis functions", "pass a spec with m >= 2")
    if spec_text != _FPCA_SPEC:
        d5, d51 = np.tile(phi[:, spec.m - 1], (n, 1)), None
        d51 = d5.copy()
        d51[0] = phi[:, 0]

    def along(i, j=None):
        d = np.tile(phi[:, i], (n, 1))
        if j is not None:
            d[0] = phi[:, j]
        return d

    last = spec.m
    pairs = [Pair(d5, d51, f"{n} curves along phi_{last} vs one replaced by phi_1"
                  + (" (the issue's pair)" if spec_text == _FPCA_SPEC else "")),
             Pair(along(0), along(0, last - 1), f"{n} curves along phi_1 vs one replaced by phi_{last}"),
             Pair(along(0), along(0, 1), f"{n} curves along phi_1 vs one replaced by phi_2"),
             Pair(along(1), along(1, 0), f"{n} curves along phi_2 vs one replaced by phi_1")]
    iterations = int(opts.get("iterations", 50))

    def release_one(curves, rng):
        with NoSeedWarning():
            tree = fp.release(spec.fit(curves), fp.ExponentialMechanism(sampler=sampler, iterations=iterations),
                              draws=1, random_seed=rng, study=True)
        return frame_features(tree["posterior"]["frame"].values.reshape(1, spec.m, spec.k))[0]

    draw = None
    if sampler != "nuts":  # one call draws many frames (a sampler failure fails the whole call: see audit)
        from ..fpca.fpca_plan import DEFAULT_MAX_PROPOSALS, exact_plan

        try:  # frames per call: as many as the public proposal cap of one release allows
            per_frame = int(exact_plan(spec, n, sampler)["proposals"]) * (iterations if sampler == "gibbs" else 1)
            chunk = int(max(1, min(10 * FPCA_CHUNK, DEFAULT_MAX_PROPOSALS // max(per_frame, 1))))
        except (InputError, ValueError, OverflowError):
            chunk = FPCA_CHUNK

        def draw(curves, size, rng):
            fit, out = spec.fit(curves), []
            for start in range(0, int(size), chunk):  # chunks: the samplers cap proposals per call
                todo = min(chunk, int(size) - start)
                with NoSeedWarning():
                    tree = fp.release(fit, fp.ExponentialMechanism(sampler=sampler, iterations=iterations), draws=todo,
                                      random_seed=rng, study=True)
                out.append(frame_features(tree["posterior"]["frame"].values.reshape(todo, spec.m, spec.k)))
            return np.concatenate(out)

    eps_claim, delta_claim = float(spec.epsilon), 0.0
    try:  # the release states its guarantee (epsilon_guaranteed, delta_guaranteed): that is the claim audited
        with NoSeedWarning():
            at = fp.release(spec.fit(pairs[0].first), fp.ExponentialMechanism(sampler=sampler, iterations=iterations),
                            draws=1, random_seed=np.random.default_rng(0), study=True).attrs
        e, d = float(at.get("epsilon_guaranteed", np.nan)), float(at.get("delta_guaranteed", np.nan))
        eps_claim = e if np.isfinite(e) else eps_claim
        delta_claim = d if np.isfinite(d) else delta_claim
    except Exception:  # noqa: BLE001  (a refusal or failure is audited as an outcome)
        pass
    return Target(name, "fpca", eps_claim, delta_claim, pairs, release_one, draw, spec_text,
                  "the released subspace: upper triangle of V V^T", opts, default_samples=FPCA_SAMPLES,
                  noise_note="not available: the exponential mechanism is not additive noise (black-box bound only)")


FPCA_AUDIT = AuditHook(_fpca_target, BY_NAME["fpca"].names, _FPCA_SPEC, _fpca_keys, lambda m: False, takes_spec=True,
                       per_call=("gp-base/nuts", "bingham/nuts"), canonical_name=fpca_name)
