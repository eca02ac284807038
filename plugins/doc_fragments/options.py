# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""DOCUMENTATION for options that several bluefleet modules share (argument specs: plumbing/_argspec.py)."""

from __future__ import annotations


class ModuleDocFragment:

    DOCUMENTATION = r"""
options: {}
"""

    FS_ROOT = r"""
options:
  fs_root:
    description:
      - The directory that stands for C(/) when the module reads or writes files (C(/sys), C(/etc), C(/dev)).
      - Leave it at C(/) on real machines; a test bed (the device twin's node root) points it elsewhere.
    type: path
    default: /
"""

    SIDE = r"""
options:
  side:
    description:
      - Where the module runs. C(host) - the GPU server's OS; C(dpu) - the BlueField's Arm OS.
      - C(auto) decides from C(mst status -v) - the Arm side of a BlueField sees the host PF representors
        C(pfNhpf); everything else is treated as a host.
    type: str
    choices: [auto, host, dpu]
    default: auto
"""
