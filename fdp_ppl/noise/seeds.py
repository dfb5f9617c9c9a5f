"""The one seed rule of every release and every sampler (DESIGN, seeds only for studies): a ``random_seed`` needs
``study=True``, and a study is never charged to a ledger. Re-exported by :mod:`fdp_ppl.noise.sampling` and
:mod:`fdp_ppl.releasing.plans`; kept apart so that every sampler module can import it."""

from __future__ import annotations

#: the ``study`` attribute (and the table's ``study`` row) of a study release: seeded or declared a study, so
#: anyone who knows or guesses its seed can remove the noise; it is never charged to a ledger
STUDY = "not private"


def check_study(random_seed, study: bool, ledger=None) -> None:
    """The seed rule of every release and of every helper that draws noise around data, checked before anything
    is read: a seed needs ``study=True``, and a study is never charged to a ledger (it is not private spending).

    The one check: :func:`fdp_ppl.release`, :func:`~fdp_ppl.noise.sampling.draw_releases`,
    :meth:`fdp_ppl.noise.mechanisms.Mechanism.simulate`, the kernel machine's helpers and every sampler's ``draw``
    (compiled, OpenDP, snapped) call it.

    Raises
    ------
    InputError
        A ``random_seed`` without ``study``; a ``ledger`` with ``study``.

    Examples
    --------
    >>> from fdp_ppl.noise.sampling import check_study
    >>> check_study(None, False), check_study(7, True)
    (None, None)
    >>> check_study(2**40, False)
    Traceback (most recent call last):
    ...
    fdp_ppl.errors.InputError: a random_seed makes the noise reproducible by anyone who knows or guesses it, so a seeded release is not private; pass no random_seed for a real release (fresh OS entropy), or study=True for a study (recorded as study = 'not private', never charged to a ledger)
    """
    from ..errors import InputError

    if random_seed is not None and not study:
        raise InputError("a random_seed makes the noise reproducible by anyone who knows or guesses it, so a seeded "
                         "release is not private", "pass no random_seed for a real release (fresh OS entropy), or "
                         f"study=True for a study (recorded as study = {STUDY!r}, never charged to a ledger)")
    if study and ledger is not None:
        raise InputError("a study is not private and cannot be charged to a ledger as private spending",
                         "drop ledger= for a study, or drop study=True and random_seed for a real release")


__all__ = ["STUDY", "check_fresh_draw", "check_study"]


def check_fresh_draw(generator: str, random_seed, study: bool) -> None:
    """The seed rule of a floating-point-safe generator's ``draw`` (OpenDP, snapped, lattice): :func:`check_study`,
    then no seed at all, since it draws fresh OS entropy only.

    Raises
    ------
    InputError
        A ``random_seed`` (with or without ``study``).

    Examples
    --------
    >>> check_fresh_draw("opendp", None, False) is None
    True
    """
    from ..errors import InputError

    check_study(random_seed, study)
    if random_seed is not None:
        raise InputError(f"the {generator!r} release generator draws fresh OS entropy and cannot be seeded",
                         "pass random_seed=None, or generator='pymc' for a reproducible study (its noise is not "
                         "floating-point safe)")
