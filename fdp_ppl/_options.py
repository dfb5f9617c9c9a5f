"""Keyword options that only some families take: defaults a function can tell apart from values given.

:func:`fdp_ppl.infer` and :func:`fdp_ppl.audit` serve several families, each of which uses only some of their
keyword options. Their signatures mark such a default with :class:`Default` (shown as the plain value by
``help()``, :func:`inspect.signature` and the docs), so that the function knows which options the caller gave —
the default value passed explicitly included — and refuses, before any work, those the family does not take
(:func:`refuse_options`), as :func:`fdp_ppl.release` does with its family options.
"""

from __future__ import annotations

from typing import Any, Iterable

from .errors import InputError


class Default:
    """The default of a keyword option, marked as not given by the caller.

    Parameters
    ----------
    value : object
        The value the option takes when it is not given (``repr`` shows it, so signatures read as usual).
    """

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __repr__(self) -> str:
        return repr(self.value)


def given_options(options: dict[str, Any]) -> list[str]:
    """Names of the options the caller gave (not a :class:`Default`), in the order of ``options``."""
    return [name for name, value in options.items() if not isinstance(value, Default)]


def option_values(options: dict[str, Any]) -> dict[str, Any]:
    """``options`` with every :class:`Default` replaced by its value."""
    return {name: value.value if isinstance(value, Default) else value for name, value in options.items()}


def refuse_options(what: str, given: Iterable[str], takes: Iterable[str]) -> None:
    """Refuse the given options that ``what`` does not take.

    Parameters
    ----------
    what : str
        The subject of the message, e.g. ``"inference from a density release"``.
    given : iterable of str
        The options the caller gave (:func:`given_options`), in signature order.
    takes : iterable of str
        The options ``what`` takes, in signature order (named in the fix).

    Raises
    ------
    InputError
        ``"<what> takes no a, b"``, fix ``"drop a, b (its options: ...)"``, when a given option is not taken.
    """
    takes = tuple(takes)
    refused = [name for name in given if name not in takes]
    if refused:
        raise InputError(f"{what} takes no {', '.join(refused)}",
                         f"drop {', '.join(refused)} (its options: {', '.join(takes) or 'none'})")


__all__ = ["Default", "given_options", "option_values", "refuse_options"]
