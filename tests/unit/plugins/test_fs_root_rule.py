"""One rule for the two filesystem roots (tests/fleet_roots.py), the same in every role and in validation."""

from __future__ import annotations

import re
from pathlib import Path

import jinja2
import pytest
import yaml
from fleet_roots import CARD_ROOT_VAR, FILES_ROOT_VAR, ROLE_CARD_ROOT, ROLE_FILES_ROOT, card_root, files_root

ROOT = Path(__file__).resolve().parents[3]
MENTION = re.compile(r"\b(%s|%s)\b" % (FILES_ROOT_VAR, CARD_ROOT_VAR))


def _role_defaults():
    """(file, variable, value) for every role default and argument-spec default that reads a root variable."""
    out = []
    for path in sorted(ROOT.glob("roles/*/defaults/main.yml")):
        for name, value in (yaml.safe_load(path.read_text(encoding="utf-8")) or {}).items():
            if isinstance(value, str) and MENTION.search(value):
                out.append((str(path.relative_to(ROOT)), name, value))
    for path in sorted(ROOT.glob("roles/*/meta/argument_specs.yml")):
        specs = yaml.safe_load(path.read_text(encoding="utf-8"))["argument_specs"]
        for entry in specs.values():
            for name, option in (entry.get("options") or {}).items():
                value = option.get("default")
                if isinstance(value, str) and MENTION.search(value):
                    out.append((str(path.relative_to(ROOT)), name, value))
    return out


def test_the_roles_read_the_roots():
    assert len(_role_defaults()) >= 10, "the roles stopped reading the root variables: update this test"


@pytest.mark.parametrize("where, name, value", _role_defaults(), ids=str)
def test_every_role_spells_one_of_the_two_rules(where, name, value):
    assert value in (ROLE_FILES_ROOT, ROLE_CARD_ROOT), (
        "%s: %s reads the root variables its own way (%s); use %r (files) or %r (card and driver)"
        % (where, name, value, ROLE_FILES_ROOT, ROLE_CARD_ROOT))


def test_the_runner_uses_the_card_rule():
    text = (ROOT / "src" / "bluefleet" / "run.py").read_text(encoding="utf-8")
    spelled = set(re.findall(r"\{\{[^}]*(?:%s|%s)[^}]*\}\}" % (FILES_ROOT_VAR, CARD_ROOT_VAR), text))
    assert spelled and spelled <= {ROLE_CARD_ROOT, ROLE_FILES_ROOT}, spelled


@pytest.mark.parametrize("variables", [
    {},                                                               # a machine
    {FILES_ROOT_VAR: "/tmp/twin/n1", CARD_ROOT_VAR: "/tmp/twin/n1"},  # the sim inventory
    {CARD_ROOT_VAR: "/var/lib/dpusim"},                               # the container lab
    {FILES_ROOT_VAR: "/tmp/twin/n1/"},                                # files root only
])
def test_jinja_rule_and_python_helper_agree(variables):
    env = jinja2.Environment(undefined=jinja2.StrictUndefined)
    card = env.from_string(ROLE_CARD_ROOT).render(**variables)
    files = env.from_string(ROLE_FILES_ROOT).render(**variables)
    assert card.rstrip("/") == card_root(variables)
    assert files.rstrip("/") == files_root(variables)


def test_the_lab_keeps_files_real_and_the_card_in_the_twin():
    lab = {CARD_ROOT_VAR: "/var/lib/dpusim"}
    assert files_root(lab) == "" and card_root(lab) == "/var/lib/dpusim"
