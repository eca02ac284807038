"""Where a fleet node keeps its files: the one rule the roles and the validation suite share.

Two roots, one precedence rule:

- the *files root* ``bluefleet_fs_root``: where roles write the files a machine keeps under ``/``
  (``/etc``, ``/usr/local``); ``/`` on machines and in the container lab, the twin root in the sim;
- the *card root* ``preflight_fs_root``: where the card and its driver keep ``/sys`` and ``/dev`` (the
  device twin's root in the lab and the sim, ``/`` on machines). When it is not set, the files root
  stands for it, then ``/``.

They differ in the lab only (files are real, the card is the twin), which is why they cannot be one
variable. Role defaults spell the same rule in Jinja (``ROLE_FILES_ROOT`` / ``ROLE_CARD_ROOT``);
tests/unit/plugins/test_fs_root_rule.py keeps every role default equal to one of those two strings.
"""

from __future__ import annotations

FILES_ROOT_VAR = "bluefleet_fs_root"
CARD_ROOT_VAR = "preflight_fs_root"
ROLE_FILES_ROOT = "{{ bluefleet_fs_root | default('/') }}"
ROLE_CARD_ROOT = "{{ preflight_fs_root | default(bluefleet_fs_root | default('/')) }}"


def files_root(variables) -> str:
    """The files root of a node's variables, without a trailing slash (``""`` for ``/``)."""
    return str(variables.get(FILES_ROOT_VAR) or "/").rstrip("/")


def card_root(variables) -> str:
    """The card root of a node's variables, without a trailing slash (``""`` for ``/``)."""
    return str(variables.get(CARD_ROOT_VAR) or variables.get(FILES_ROOT_VAR) or "/").rstrip("/")


def files_path(node, path: str) -> str:
    """``path`` (absolute, as the machine sees it) under the node's files root."""
    return files_root(node.vars) + path


def card_path(node, path: str) -> str:
    """``path`` (``/sys/...``, ``/dev/...``) under the node's card root."""
    return card_root(node.vars) + path
