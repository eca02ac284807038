"""Every role has meta/argument_specs.yml, and its options are exactly the role's defaults, with the same values."""

from __future__ import annotations

from pathlib import Path

import jinja2
import pytest
import yaml

ROLES = Path(__file__).resolve().parents[3] / "roles"
ALL = sorted(p.name for p in ROLES.iterdir() if (p / "tasks" / "main.yml").exists())


def _load(path: Path):
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def _rendered(value):
    """A templated default with no inventory variable set (``default(...)`` filters take over): text and data."""
    text = jinja2.Environment(undefined=jinja2.ChainableUndefined).from_string(value).render()
    try:
        return (text, yaml.safe_load(text) if text else text)
    except yaml.YAMLError:
        return (text,)


def test_every_role_is_covered():
    assert len(ALL) >= 13, ALL  # a role directory that lost its tasks would drop out of the table below


@pytest.mark.parametrize("role", ALL)
def test_argument_spec_equals_defaults(role):
    spec_file = ROLES / role / "meta" / "argument_specs.yml"
    assert spec_file.exists(), "roles/%s has no meta/argument_specs.yml: its inputs are not checked" % role
    options = _load(spec_file)["argument_specs"]["main"]["options"]
    defaults = _load(ROLES / role / "defaults" / "main.yml") or {}
    assert set(options) == set(defaults), "spec and defaults differ: %s" % sorted(set(options) ^ set(defaults))
    for name, spec in options.items():
        assert name.startswith(role + "_"), name
        # a templated default is documented either as written or as it renders with no inventory variable set
        # (or, for the doca_services convention, in words with no default key)
        if isinstance(defaults[name], str) and "{{" in defaults[name]:
            assert spec.get("default", defaults[name]) in (defaults[name], *_rendered(defaults[name])), name
        else:
            assert spec.get("default") == defaults[name], name
        assert spec.get("description"), name
        assert spec.get("type"), name


@pytest.mark.parametrize("role", ALL)
def test_secrets_are_no_log(role):
    options = _load(ROLES / role / "meta" / "argument_specs.yml")["argument_specs"]["main"]["options"]
    for name, spec in options.items():
        if any(word in name for word in ("_psk", "_password", "_key")) and not name.endswith(("_length", "_distinct")):
            if spec.get("type") in ("str", "raw") and "hash" not in name:
                assert spec.get("no_log") is True, "%s: a secret without no_log" % name
