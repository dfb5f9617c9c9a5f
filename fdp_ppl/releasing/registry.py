"""One registry of the mechanisms, summaries, kernels and noise laws.

The command line's choices, plot labels and the studies (notebooks/studies) read these
tables; adding a mechanism or a summary is one new module plus one line here
(see ``CONTRIBUTING.md``).

* :data:`MECHANISMS` — name → :class:`MechanismEntry`: how to build the
  mechanism from (ε, δ, options) and which summary spec it releases.
* :data:`RELEASES` — fitted class → :class:`ReleaseEntry`: the family release function
  :func:`fdp_ppl.release` calls, the mechanisms it accepts (including the FPCA
  :class:`~fdp_ppl.fpca.mechanism.ExponentialMechanism`) and its options.
* :data:`SUMMARIES` — spec name (``attrs["summary"]``) → spec class.
* :data:`KERNELS` — kernel names of :func:`fdp_ppl.spaces.kernel_from_name`.
* :data:`LAWS` — noise-law classes.
* :func:`label` — display names for plots and tables.

Examples
--------
>>> import fdp_ppl as fp
>>> list(fp.registry.MECHANISMS)[:5]                        # the command line's --mechanism choices
['iclp-qr', 'iclp-ar', 'frl', 'bernstein', 'gaussian']
>>> fp.registry.label("iclp"), fp.registry.label("iclp-qr", kind="summary")
('ICLP', 'ICLP-QR mean')
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from .._names import KERNEL_NAMES
from .families import RELEASES, ReleaseEntry, release_entry

if TYPE_CHECKING:  # annotations only: the entries import their classes when they are built
    from ..noise.mechanisms import Mechanism
    from ..summaries import SummarySpec

# The entries name their classes; the classes (and PyMC, which the mechanisms import) are imported when an entry
# builds something or when SUMMARIES / LAWS are first read (PEP 562), so `fdp-ppl --help` stays fast.

#: kernel names accepted by :func:`fdp_ppl.spaces.kernel_from_name`
KERNELS: tuple[str, ...] = KERNEL_NAMES


def _summaries() -> dict:
    from ..summaries import BernsteinSpec, FRLSpec, ICLPARSpec, ICLPQRSpec, RKHSSpec, SampleMeanSpec

    return {cls.name: cls for cls in (ICLPQRSpec, ICLPARSpec, FRLSpec, RKHSSpec, SampleMeanSpec, BernsteinSpec)}


def _laws() -> dict:
    from ..noise.elliptical import process  # noqa: F401  (registers the elliptical laws)
    from ..noise.laws import NoiseLaw

    return {cls.key: cls for cls in NoiseLaw.classes}


#: SUMMARIES: summary spec classes by the name recorded in releases; LAWS: noise-law classes by key
_LAZY = {"SUMMARIES": _summaries, "LAWS": _laws}


def __getattr__(name):
    if name in _LAZY:
        value = globals()[name] = _LAZY[name]()
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _lazy(name: str):
    return globals()[name] if name in globals() else __getattr__(name)


def _iclp(eps, delta):
    from ..noise.mechanisms import ICLP

    return ICLP(eps)


def _frl(eps, delta):
    from ..noise.mechanisms import FRL

    return FRL(eps)


def _bernstein(eps, delta):
    from ..noise.mechanisms import Bernstein

    return Bernstein(eps)


def _gaussian(eps, delta, calibration):
    from ..noise.mechanisms import GaussianMechanism

    return GaussianMechanism(eps, delta, calibration=calibration)


def _elliptical_process(family):
    def build(eps, delta, calibration, nu=None):
        from ..noise.elliptical.process import EllipticalProcessMechanism

        return EllipticalProcessMechanism(eps, delta, family=family, **({"nu": nu} if family == "t" else {}),
                                          calibration=calibration)

    return build


def _elliptical(family):
    def build(eps, delta, nu=None):
        from ..noise.elliptical.process import EllipticalMechanism

        return EllipticalMechanism(eps, family=family, **({"nu": nu} if family == "t" else {}))

    return build


@dataclass(frozen=True)
class MechanismEntry:
    """How a named mechanism is built and what it releases.

    Attributes
    ----------
    name : str
        Command-line name (``--mechanism NAME``).
    summary : str
        Name of the summary spec it releases (a key of :data:`SUMMARIES`).
    build : callable
        ``build(epsilon, delta, **options) -> Mechanism``.
    approximate : bool
        True for (ε, δ) mechanisms (they need δ).
    options : tuple of str
        Mechanism options the entry accepts beyond ε and δ (``calibration``, ``nu``).
    option_defaults : dict
        Defaults of those options (passed to ``build`` when an option is None).
    summary_options : tuple of str
        Summary options it accepts (``eta``, ``psi``, ``M``, ``k``).
    defaults : dict
        Summary option defaults that differ from the spec's (e.g. η = 1 for RKHS).
    description : str
    """

    name: str
    summary: str
    build: Callable[..., Mechanism]
    approximate: bool = False
    options: tuple[str, ...] = ()
    option_defaults: dict[str, Any] = field(default_factory=dict)
    summary_options: tuple[str, ...] = ()
    defaults: dict[str, Any] = field(default_factory=dict)
    description: str = ""

    @property
    def spec_class(self) -> type[SummarySpec]:
        return _lazy("SUMMARIES")[self.summary]

    @property
    def uses_kernel(self) -> bool:
        """Whether its summary is on an eigenbasis of a noise kernel (else a polynomial basis on a lattice)."""
        from ..summaries import EigenSpec

        return issubclass(self.spec_class, EigenSpec)

    def check_options(self, *, delta: float | None = None, kernel=None, rho=None, names: dict | None = None,
                      **options) -> None:
        """Refuse, from public quantities only and before any data is read, what this mechanism does not take: a
        δ for a pure ε-DP mechanism, an option (given, not None) of other mechanisms or summaries, a noise kernel
        for a summary on a lattice. The values themselves are checked by the mechanism and the spec.

        ``names`` (keyword -> name) names the options in messages (the command line passes its flags); default
        the keyword.

        Raises
        ------
        InputError
            One line naming the option and the mechanisms that take it.

        Examples
        --------
        >>> from fdp_ppl.releasing.registry import MECHANISMS
        >>> MECHANISMS["iclp-qr"].check_options(eta=2.0)
        >>> MECHANISMS["iclp-qr"].check_options(delta=1e-5)
        Traceback (most recent call last):
        ...
        fdp_ppl.errors.InputError: mechanism iclp-qr is pure epsilon-DP and takes no delta; drop delta or use an (epsilon, delta) mechanism (gaussian, rkhs-gaussian, t-process, laplace-process)
        """
        from ..errors import InputError

        names = dict(names or {})

        def n(key):
            return names.get(key, key)

        if not self.approximate and delta is not None:
            approx = ", ".join(m for m, e in MECHANISMS.items() if e.approximate)
            raise InputError(f"{n('mechanism')} {self.name} is pure epsilon-DP and takes no {n('delta')}",
                             f"drop {n('delta')} or use an (epsilon, delta) mechanism ({approx})")
        accepted = (*self.options, *self.summary_options)
        for key, value in options.items():
            if value is not None and key not in accepted:
                users = [m for m, e in MECHANISMS.items() if key in (*e.options, *e.summary_options)]
                raise InputError(f"{n(key)} applies only to {n('mechanism')} {', '.join(users) or 'none'}, not to "
                                 f"{self.name}", f"drop {n(key)}")
        if not self.uses_kernel and (kernel is not None or rho is not None):
            raise InputError(f"{n('kernel')}/{n('rho')} do not apply to {n('mechanism')} {self.name} (a polynomial "
                             "basis on a lattice, no kernel)", f"drop them; {n('k')} sets the lattice size")

    def mechanism(self, epsilon: float, delta: float | None = None, **options) -> Mechanism:
        """Build the mechanism; options outside :attr:`options` are ignored when None."""
        extra = {k: v for k, v in options.items() if v is not None}
        unknown = set(extra) - set(self.options)
        if unknown:
            from ..errors import InputError

            raise InputError(f"mechanism {self.name!r} takes no option {sorted(unknown)}",
                             f"its options are {list(self.options) or 'none'}")
        return self.build(epsilon, delta, **{**self.option_defaults, **extra})

    def spec(self, basis_or_grid, *, tau: float, n: int, **options) -> SummarySpec:
        """Build the public summary spec (``basis_or_grid`` is an Eigenbasis, or a Grid for Bernstein)."""
        from ..summaries import BernsteinSpec

        opts = {**self.defaults, **{k: v for k, v in options.items() if v is not None}}
        if self.spec_class is BernsteinSpec:
            return BernsteinSpec(lattice_grid=basis_or_grid, tau=tau, n=n, **opts)
        return self.spec_class(basis=basis_or_grid, tau=tau, n=n, **opts)


def _register(*entries: MechanismEntry) -> dict[str, MechanismEntry]:
    return {e.name: e for e in entries}


#: mechanisms by command-line name
MECHANISMS: dict[str, MechanismEntry] = _register(
    MechanismEntry("iclp-qr", "iclp-qr", _iclp, summary_options=("eta", "psi"),
                   description="ICLP (Laplace on the eigenbasis), ICLP-QR mean; Lin & Reimherr (2026)"),
    MechanismEntry("iclp-ar", "iclp-ar", _iclp, summary_options=("eta", "psi"),
                   description="ICLP, ICLP-AR (soft-thresholded) mean; Lin & Reimherr (2026)"),
    MechanismEntry("frl", "frl", _frl, summary_options=("M",),
                   description="FRL: i.i.d. Laplace on the first M coefficients; Lin & Reimherr (2026)"),
    MechanismEntry("bernstein", "bernstein", _bernstein, summary_options=("k",),
                   description="Bernstein mechanism (tau is the sup-norm bound); Aldà & Rubinstein (2017)"),
    MechanismEntry("gaussian", "iclp-qr",
                   _gaussian,
                   approximate=True, options=("calibration",), option_defaults={"calibration": "analytic"},
                   summary_options=("eta", "psi"),
                   description="Gaussian process noise, ridge (ICLP-QR) mean; Mirshani et al. (2019)"),
    MechanismEntry("rkhs-gaussian", "rkhs",
                   _gaussian,
                   approximate=True, options=("calibration",), option_defaults={"calibration": "analytic"},
                   summary_options=("eta", "psi"), defaults={"eta": 1.0},
                   description="Gaussian process noise, RKHS mean (eta = 1); Mirshani et al. (2019)"),
    MechanismEntry("t-process", "iclp-qr",
                   _elliptical_process("t"),
                   approximate=True, options=("nu", "calibration"), option_defaults={"calibration": "exact"},
                   summary_options=("eta", "psi"),
                   description="t process (GP x random scale), ridge mean; Reimherr & Awan (2019)"),
    MechanismEntry("laplace-process", "iclp-qr",
                   _elliptical_process("laplace"),
                   approximate=True, options=("calibration",), option_defaults={"calibration": "exact"},
                   summary_options=("eta", "psi"),
                   description="Laplace process (GP x exponential scale), ridge mean; Reimherr & Awan (2019)"),
    MechanismEntry("t", "iclp-qr", _elliptical("t"),
                   options=("nu",), summary_options=("eta", "psi"),
                   description="multivariate t on the J coefficients (pure eps); Reimherr & Awan (2019)"),
    MechanismEntry("knorm", "iclp-qr", _elliptical("knorm"),
                   summary_options=("eta", "psi"),
                   description="ellipsoidal K-norm on the J coefficients (pure eps); Reimherr & Awan (2019)"),
)

_LABELS = {
    # mechanism families (attrs["mechanism"])
    "iclp": "ICLP", "frl": "FRL", "gaussian": "Gaussian", "bernstein": "Bernstein",
    "elliptical-process": "elliptical process", "elliptical": "elliptical",
    # summaries (attrs["summary"])
    "iclp-qr": "ICLP-QR mean", "iclp-ar": "ICLP-AR mean", "rkhs": "RKHS mean", "sample-mean": "sample mean",
    # laws (attrs["noise_law"])
    "laplace": "Laplace", "normal": "Normal",
}
_SUMMARY_LABELS = {"frl": "FRL mean", "bernstein": "Bernstein mean"}
_ELLIPTICAL_LABELS = {"t": "t", "laplace": "Laplace-process", "knorm": "K-norm", "gaussian": "Gaussian"}


def label(name: str, kind: str = "mechanism") -> str:
    """Display name of a mechanism family, summary (``kind="summary"``) or noise law.

    Unknown names come back unchanged; an elliptical law ``elliptical-t(nu=3)``
    reads ``t (ν = 3)``.
    """
    name = str(name)
    if kind == "summary" and name in _SUMMARY_LABELS:
        return _SUMMARY_LABELS[name]
    if name in _LABELS:
        return _LABELS[name]
    if name.startswith("elliptical-"):  # an elliptical noise law: elliptical-<kind>[(nu=ν)]
        kind, _, nu = name.removeprefix("elliptical-").partition("(nu=")
        text = _ELLIPTICAL_LABELS.get(kind, kind)
        return f"{text} (ν = {nu.rstrip(')')})" if nu else text
    return name


__all__ = ["MECHANISMS", "MechanismEntry", "RELEASES", "ReleaseEntry", "release_entry", "SUMMARIES", "KERNELS",
           "LAWS", "label"]
