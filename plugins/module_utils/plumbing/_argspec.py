# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Argument-spec fragments: one name, one type and one meaning per option across the bluefleet modules.

- ``timeout``: seconds each command may run (int; the default is the module's).
- ``fs_root``: the directory that stands for ``/`` when a module reads or writes files (``type: path``).
  The older per-module name ``sysfs_root`` (roce_qos) is an alias. Documented once in
  ``plugins/doc_fragments/options.py`` (``bluefleet.dpu.options.fs_root``).
- ``side``: where the module runs, ``auto``, ``host`` or ``dpu`` (``bluefleet.dpu.options.side``).
- ``device``: the card as the MFT tools name it (PCI address or ``/dev/mst/...`` path).
- ``wait`` is a bool everywhere (wait for the result or not); how long is ``wait_timeout`` (int seconds).

Each function returns a fresh dict, so a module may change its copy.
"""

from __future__ import annotations

COLLECTION = "bluefleet.dpu"


def timeout_spec(default):
    """The ``timeout`` option: seconds each command may run."""
    return {"type": "int", "default": default}


def side_spec():
    """The ``side`` option: where the module runs, ``host``, ``dpu`` or ``auto`` (``_cards.side_of``)."""
    return {"type": "str", "choices": ["auto", "host", "dpu"], "default": "auto"}


def fs_root_spec(aliases=()):
    """The ``fs_root`` option: the directory that stands for ``/`` when the module reads or writes files.

    ``aliases``: older names a module accepted for the same option (kept so playbooks do not break).
    """
    spec = {"type": "path", "default": "/"}
    if aliases:
        spec["aliases"] = list(aliases)
    return spec


def device_spec(required=False):
    """The ``device`` option: the card's PCI address or MST device path."""
    spec = {"type": "str"}
    if required:
        spec["required"] = True
    return spec


def wait_spec(default=True):
    """The ``wait`` option: a bool, whether to wait for the outcome (how long: ``wait_timeout_spec``)."""
    return {"type": "bool", "default": default}


def wait_timeout_spec(default, old_name=None, removed_in="2.0.0"):
    """The ``wait_timeout`` option: seconds to wait for the outcome.

    ``old_name``: a name the module used before for this number (``wait`` as an int); it keeps working as
    a deprecated alias until ``removed_in``.
    """
    spec = {"type": "int", "default": default}
    if old_name:
        spec["aliases"] = [old_name]
        spec["deprecated_aliases"] = [{"name": old_name, "version": removed_in, "collection_name": COLLECTION}]
    return spec
