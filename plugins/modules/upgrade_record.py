# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

# Documentation only: the action plugin plugins/action/upgrade_record.py does the work on the controller.

from __future__ import annotations

DOCUMENTATION = r"""
module: upgrade_record
short_description: Write a node's upgrade record on the controller, without a module process
version_added: 0.2.0
description:
  - Writes O(record) as JSON (the bytes of C(to_nice_json) and a newline) to O(path) on the controller, where
    C(playbooks/upgrade.yml) keeps one record per node (what the node ran before its upgrade, the target, and a
    recorded blocker) and reads it back with a lookup.
  - Runs in Ansible's worker on the controller, as C(ansible.builtin.set_fact) does; the node is not contacted,
    and no module process starts (C(ansible.builtin.copy) delegated to localhost started two per record).
  - Writes only when the content or the mode differ, atomically (a temporary file in the same folder, renamed over
    the old one). Missing folders above O(path) are created with O(dir_mode).
  - A folder above O(path) that is a file, or O(path) that is a directory, fails the task naming it; nothing is
    written.
author:
  - bluefleet developers (!UNKNOWN)
options:
  path:
    description: The record's file on the controller; a relative path is taken from the folder
      C(ansible-playbook) runs in.
    type: path
    required: true
  record:
    description: The record (any JSON-serialisable mapping).
    type: dict
    required: true
  mode:
    description: The file's permissions, octal as a string (C('0644')); an existing file with another mode gets
      this one.
    type: raw
    default: '0644'
  dir_mode:
    description: Permissions of the folders created above O(path), octal as a string.
    type: raw
    default: '0755'
attributes:
  check_mode:
    description: Reads the record and reports whether it would change; writes nothing.
    support: full
  diff_mode:
    description: The record before and after, when it changes.
    support: full
  platform:
    description: Runs on the controller only; the node is not contacted.
    platforms: posix
    support: full
notes:
  - Owner and group are not managed; a new record belongs to the user running C(ansible-playbook).
seealso:
  - module: ansible.builtin.copy
  - module: bluefleet.dpu.files
"""

EXAMPLES = r"""
- name: Record what the node ran before its upgrade
  bluefleet.dpu.upgrade_record:
    path: "{{ bluefleet_state_dir }}/{{ inventory_hostname }}.json"
    record:
      host: "{{ inventory_hostname }}"
      previous: {nic_firmware: 32.41.1000}
      target: {nic_firmware: 32.43.1014}
"""

RETURN = r"""
changed:
  description: True when the record or its mode was written (in check mode, would be).
  returned: always
  type: bool
path:
  description: The record's absolute path on the controller.
  returned: always
  type: str
  sample: /srv/bluefleet/state/upgrade/3f2c1a9e0b7d/host01-dpu.json
created:
  description: True when there was no record before.
  returned: always
  type: bool
directories:
  description: The folders created above the record (in check mode, that would be), outermost first.
  returned: always
  type: list
  elements: str
diff:
  description: The record before and after (headers are its path).
  returned: when diff mode is on and the record changes
  type: dict
"""
