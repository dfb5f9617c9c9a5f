"""The laws of a released FPCA frame given the data's second moment: one hook per release mechanism, for
:func:`fdp_ppl.inference.components.infer_components`.

A release records how its frames were drawn (root attrs ``sampler``, optionally ``frame_law``);
:func:`frame_law` maps that to one of :data:`FRAME_LAWS`, each giving the log-likelihood of released frames
V_f (m × k) as a function of the Bingham parameter A = s(G − Σ⁻¹) (numpy, for ``log_likelihood`` and SBC),
the same as a PyMC potential (for NUTS), and replicated frames (posterior predictive). A second law plugs in by
adding a class with the same four methods to :data:`FRAME_LAWS` and naming it in :data:`SAMPLER_LAWS` (or in
the release's ``frame_law`` attribute).

* ``"matrix-bingham"`` — ``p(V | A) = etr(VᵀAV)/₁F₁(k/2; m/2; A)`` w.r.t. the Haar law on m × k frames
  (Awan et al. 2019, Sec. 5): the exact sampler (k = 1, ACG rejection) and the Gibbs and NUTS samplers
  (k > 1, uncertified MCMC whose target this is). The likelihood depends on V only through VVᵀ. Normaliser:
  :func:`~fdp_ppl.inference.stiefel.stiefel_log_constant` (k = 1 exact series or saddlepoint; k ≥ m − 1 exact;
  otherwise the zonal-polynomial series, exact to its bound, where the release's public spread bound is small,
  else the nested approximation, within :data:`~fdp_ppl.inference.stiefel.NESTED_TOLERANCE` nats).
* ``"sequential-bingham"`` — a deflation mechanism: column i is a vector Bingham draw with parameter
  w_i P_iᵀAP_i on the unit sphere of the complement of the earlier columns (P_i an orthonormal basis of it),
  w_i = ε_i/ε the step's share of the frame's ε (release attr ``epsilon_steps``, default ε/k each). Density
  ``Π_i exp(w_i v_iᵀAv_i)/c_i`` w.r.t. the Haar law, each c_i an exact vector Bingham constant
  (:func:`~fdp_ppl.inference.stiefel.sequential_log_constant`): the likelihood is exact. The column order
  matters.
"""

from __future__ import annotations

import numpy as np

from ..errors import InputError
from .stiefel import (sequential_log_constant, sequential_log_constant_op, stiefel_log_constant,
                      stiefel_log_constant_op, zonal_degree)


class MatrixBingham:
    """The matrix Bingham law of released frames (module docstring)."""

    name = "matrix-bingham"

    @staticmethod
    def constant_method(m: int, k: int, vector_method: str, requested: str = "auto", spread=None) -> str:
        """The normaliser's method for the run: k = 1 the vector method; k ≥ m − 1 ``"complement"`` (exact);
        else ``"zonal"`` (exact to :data:`~fdp_ppl.inference.stiefel.ZONAL_TOLERANCE`) where the public bound
        ``spread`` on the spread of A's eigenvalues lets the zonal series run
        (:func:`~fdp_ppl.inference.stiefel.zonal_degree`), otherwise ``"nested"``."""
        if k == 1:
            return vector_method
        small = spread is not None and zonal_degree(float(spread), m, k) is not None
        auto = "complement" if k >= m - 1 else ("zonal" if small else "nested")
        if requested in ("auto", "series", "saddlepoint"):
            return auto
        if requested == "complement" and k < m - 1:
            raise InputError(f"the complement identity is exact for k >= m - 1 only (k = {k}, m = {m})",
                             "pass log_constant='auto'")
        if requested == "zonal" and not small:
            raise InputError(f"the zonal series does not reach this release's spread bound ({spread:.4g}) at m = {m}, "
                             f"k = {k}", "pass log_constant='auto' or 'nested'")
        if requested not in ("nested", "complement", "zonal"):
            raise InputError(f"unknown log_constant {requested!r}",
                             "choose 'auto', 'series', 'saddlepoint', 'nested', 'complement' or 'zonal'")
        return requested

    @staticmethod
    def weights(attrs, k: int) -> np.ndarray:
        return np.ones(k)

    def logp(self, lik, A) -> np.ndarray:
        """Log-likelihood of each frame, (..., F), for A of shape (..., m, m)."""
        flat = A.reshape(-1, *A.shape[-2:])
        logc = np.array([stiefel_log_constant(a, lik.k, lik.method, vector_method=lik.vector_method)
                         if lik.k > 1 else stiefel_log_constant(a, 1, vector_method=lik.method)
                         for a in flat]).reshape(A.shape[:-2])
        quad = np.einsum("fik,...ij,fjk->...f", lik.frames, A, lik.frames)
        return quad - logc[..., None]

    @staticmethod
    def data(lik) -> dict:
        V = lik.frames
        return {"scatter": np.einsum("fik,fjk->ij", V, V), "n_frames": float(V.shape[0])}

    @staticmethod
    def declare(m: int, k: int) -> dict:
        import pymc as pm

        return {"scatter": pm.Data("scatter", np.zeros((m, m))), "n_frames": pm.Data("n_frames", 1.0)}

    @staticmethod
    def potential(A, data, lik):
        import pytensor.tensor as pt

        op = stiefel_log_constant_op(lik.k, lik.method, lik.vector_method)
        logc, _ = op(A)
        return pt.sum(A * data["scatter"]) - data["n_frames"] * logc   # Σ_f tr(V_fᵀAV_f) = tr(A Σ_f V_fV_fᵀ)

    @staticmethod
    def replicate(lik, A, rng, scans: int) -> np.ndarray:
        """One frame (m, k): exact ACG rejection for k = 1, else ``scans`` Gibbs scans (Hoff 2009; the Gibbs
        release's own law)."""
        from ..fpca.samplers import gibbs_matrix_bingham, sample_vector_bingham

        if lik.k == 1:
            return sample_vector_bingham(A, 1, rng)[0][:, None]
        return gibbs_matrix_bingham(A, lik.k, scans, rng)[0][0]

    def describe(self, lik) -> str:
        how = {"complement": "exact (complement identity, k >= m - 1)",
               "zonal": "truncated zonal-polynomial series (exact to its stated bound, inference/stiefel.py)",
               "nested": "nested approximation from exact vector Bingham constants (inference/stiefel.py)"}
        return (f"matrix Bingham etr(V'AV)/1F1(k/2; m/2; A), k = {lik.k}, A = s(G - Sigma^-1), s = {lik.scale:g}; "
                f"log 1F1 by the {how.get(lik.method, lik.method)}"
                + (f", vector constants by the {lik.vector_method}" if lik.k > 1 else ""))


class SequentialBingham:
    """The sequential (deflation) Bingham law of released frames (module docstring)."""

    name = "sequential-bingham"

    @staticmethod
    def constant_method(m: int, k: int, vector_method: str, requested: str = "auto", spread=None) -> str:
        if requested not in ("auto", "series", "saddlepoint"):
            raise InputError(f"log_constant {requested!r} does not apply to the sequential law",
                             "pass 'auto', 'series' or 'saddlepoint'")
        return vector_method

    @staticmethod
    def weights(attrs, k: int) -> np.ndarray:
        """w_i = ε_i/ε from ``epsilon_steps`` (a sequence or comma-separated string), default 1/k each."""
        steps = attrs.get("epsilon_steps")
        if steps is None:
            return np.full(k, 1.0 / k)
        if isinstance(steps, str):
            steps = [float(x) for x in steps.replace("[", "").replace("]", "").split(",") if x.strip()]
        w = np.asarray(steps, dtype=float).reshape(-1)
        if w.size != k or not np.all(w > 0):
            raise InputError(f"epsilon_steps must hold {k} positive budgets (got {steps!r})",
                             "pass the release as written by fdp_ppl.release")
        return w / float(attrs["epsilon"])

    def logp(self, lik, A) -> np.ndarray:
        flat = A.reshape(-1, *A.shape[-2:])
        V = lik.frames
        quad = np.einsum("fik,k,...ij,fjk->...f", V, lik.weights, A, V)
        logc = np.array([[sequential_log_constant(v, a, lik.weights, lik.method) for v in V] for a in flat])
        return quad - logc.reshape(A.shape[:-2] + (V.shape[0],))

    @staticmethod
    def data(lik) -> dict:
        V = lik.frames
        return {"scatter": np.einsum("fik,k,fjk->ij", V, lik.weights, V), "frames_all": V, "weights": lik.weights}

    @staticmethod
    def declare(m: int, k: int) -> dict:
        import pymc as pm

        return {"scatter": pm.Data("scatter", np.zeros((m, m))), "frames_all": pm.Data("frames_all",
                                                                                      np.zeros((1, m, k))),
                "weights": pm.Data("weights", np.ones(k))}

    @staticmethod
    def potential(A, data, lik):
        import pytensor.tensor as pt

        logc, _ = sequential_log_constant_op(lik.method)(A, data["frames_all"], data["weights"])
        return pt.sum(A * data["scatter"]) - logc

    @staticmethod
    def replicate(lik, A, rng, scans: int) -> np.ndarray:
        """One frame (m, k) of the sequential law, exactly (ACG rejection per step)."""
        from ..fpca.samplers import _complement, sample_vector_bingham

        m, k = A.shape[0], lik.k
        V = np.zeros((m, 0))
        for i in range(k):
            P = _complement(V)
            u = sample_vector_bingham(lik.weights[i] * (P.T @ A @ P), 1, rng)[0]
            V = np.column_stack([V, P @ u])
        return V

    def describe(self, lik) -> str:
        return (f"sequential Bingham: column i ~ exp(w_i v'Av)/c_i on the complement of columns < i, w = "
                f"{np.round(lik.weights, 6).tolist()}, A = s(G - Sigma^-1), s = {lik.scale:g}; each c_i exact "
                f"(vector Bingham by the {lik.method})")


#: the frame laws by name
FRAME_LAWS = {MatrixBingham.name: MatrixBingham(), SequentialBingham.name: SequentialBingham()}
#: which law a release's ``sampler`` attribute implies (a ``frame_law`` attribute, when present, wins)
SAMPLER_LAWS = {"exact": MatrixBingham.name, "gibbs": MatrixBingham.name, "nuts": MatrixBingham.name,
                "sequential": SequentialBingham.name, "deflation": SequentialBingham.name,
                "sequential-bingham": SequentialBingham.name}


def frame_law(attrs):
    """The law of a release's frames from its public attrs (``frame_law``, else ``sampler``).

    Raises
    ------
    InputError
        A law or sampler no hook serves.
    """
    name = attrs.get("frame_law")
    if name is None:
        sampler = str(attrs.get("sampler", "exact"))
        if sampler not in SAMPLER_LAWS:
            raise InputError(f"no likelihood for frames drawn by the sampler {sampler!r}",
                             f"inference serves the samplers {sorted(SAMPLER_LAWS)}")
        name = SAMPLER_LAWS[sampler]
    if name not in FRAME_LAWS:
        raise InputError(f"unknown frame law {name!r}", f"inference serves {sorted(FRAME_LAWS)}")
    return FRAME_LAWS[name]


__all__ = ["FRAME_LAWS", "SAMPLER_LAWS", "MatrixBingham", "SequentialBingham", "frame_law"]
