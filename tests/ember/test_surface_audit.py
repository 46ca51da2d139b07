"""Issue 15's audit: every public name of the torch namespaces it lists exists in ember, or
LEFT_OUT in surface_audit.py says why not."""

import pytest

pytest.importorskip("torch")

from tests.ember import surface_audit

MISSING = surface_audit.missing()


@pytest.mark.parametrize("namespace", sorted(MISSING))
def test_every_name_exists_or_is_explained(namespace):
    unexplained = [
        name for name in MISSING[namespace] if f"{namespace}.{name}" not in surface_audit.LEFT_OUT
    ]
    assert unexplained == [], f"ember lacks {namespace}: {unexplained}"


def test_explanations_are_for_names_still_missing():
    """A name ember gained leaves the table."""
    missing = {f"{ns}.{name}" for ns, names in MISSING.items() for name in names}
    assert sorted(set(surface_audit.LEFT_OUT) - missing) == []


def test_the_audit_can_see_a_missing_name(monkeypatch):
    import ember

    monkeypatch.delattr(ember.profiler, "schedule")
    assert "schedule" in surface_audit.missing()["torch.profiler"]
