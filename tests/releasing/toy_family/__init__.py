"""A toy release family for the tests: a clipped scalar mean with Laplace noise, its own folder plus the one
registry line below (DESIGN: one registry, one protocol). Importing this package registers it."""

from fdp_ppl.releasing.families import ReleaseEntry, register_family

_HERE = __name__ + ".release"

ENTRY = register_family(ReleaseEntry(
    "toy", "toy_release", (), _HERE, (f"{_HERE}.ScalarMeanFit",), (f"{_HERE}.ScalarMeanSpec",),
    (f"{_HERE}.ScalarLaplace",), hint="ScalarLaplace(epsilon)", label="toy scalar-mean",
    inference=f"{_HERE}.infer_release", infer_options=("prior", "random_seed")))
