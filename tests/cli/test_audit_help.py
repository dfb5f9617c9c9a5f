"""``fdp-ppl audit --help`` names exactly the registry's mechanisms and families (DESIGN: one registry, one name
per family): the help is read from the registry lines, never typed by hand."""

import contextlib
import io
import re

from fdp_ppl.cli import main


def _help() -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["audit", "--help"]) == 0
    return " ".join(out.getvalue().split())


def test_audit_help_names_exactly_the_registry_mechanisms_of_each_family():
    from fdp_ppl._names import KDE_MECHANISMS
    from fdp_ppl.auditing.targets import FAMILIES as AUDITED
    from fdp_ppl.auditing.targets import mechanisms_of
    from fdp_ppl.kde.options import MECHANISMS as KDE
    from fdp_ppl.releasing.families import ALIASES, FAMILIES
    from fdp_ppl.releasing.registry import MECHANISMS

    text = _help()
    listed = re.search(r"--mechanism NAME ([a-z]+: .*?) --family", text).group(1)
    per_family = dict(part.split(": ", 1) for part in listed.split("; "))
    assert tuple(per_family) == AUDITED == tuple(e.family for e in FAMILIES if e.audit)
    for family, names in per_family.items():
        assert tuple(names.split(", ")) == mechanisms_of(family), family
    assert mechanisms_of("mean") == tuple(MECHANISMS) and tuple(KDE) == KDE_MECHANISMS == mechanisms_of("kde")
    choices = re.search(r"--family \{([^}]*)\}", text).group(1).split(",")
    assert set(choices) == set(AUDITED) | set(ALIASES)
    for old, family in ALIASES.items():
        assert f"former name {old!r}" in text and family in text
