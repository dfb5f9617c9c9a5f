"""MCMC diagnostics shared by the inference modules (:mod:`.infer`, :mod:`.components`)."""

from __future__ import annotations

import arviz as az
import xarray as xr

from ..releasing import schema as S


class InferenceWarning(UserWarning):
    """MCMC diagnostics failed (R-hat, ESS or divergences)."""


def diagnostics(tree: xr.DataTree, var_names=None) -> dict:
    """Max R-hat, min bulk/tail ESS and the number of divergences of a posterior."""
    var_names = var_names or list(tree[S.POSTERIOR].data_vars)
    post = tree[S.POSTERIOR].to_dataset()[var_names]
    rhat = az.rhat(post)
    ess_b = az.ess(post, method="bulk")
    ess_t = az.ess(post, method="tail")
    div = int(tree["sample_stats"]["diverging"].sum()) if "sample_stats" in tree.children else 0
    return {"max_rhat": float(max(float(rhat[v].max()) for v in rhat.data_vars)),
            "min_ess_bulk": float(min(float(ess_b[v].min()) for v in ess_b.data_vars)),
            "min_ess_tail": float(min(float(ess_t[v].min()) for v in ess_t.data_vars)),
            "divergences": div}


__all__ = ["InferenceWarning", "diagnostics"]
