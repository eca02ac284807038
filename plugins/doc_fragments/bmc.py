# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  bmc:
    description:
      - The BlueField-3 BMC to talk to (the inventory's C(bluefleet_bmc)).
      - The module runs where the task runs; use C(delegate_to=localhost) to reach the BMC from the controller.
    type: dict
    required: true
    suboptions:
      address:
        description:
          - Host, C(HOST:PORT) or URL of the BMC's Redfish service. Without a scheme C(https://) is used.
        type: str
        required: true
      username:
        description: BMC user.
        type: str
        default: root
      password:
        description:
          - Password of O(bmc.username). Taken from the environment variable C(BLUEFLEET_BMC_PASSWORD) when not given.
          - Never logged. A wrong password stops the module at the first HTTP 401, so it can never lock the
            account (the BMC locks it after 4 or 10 failures, for 600 seconds).
        type: str
        required: true
      validate_certs:
        description:
          - Check the BMC's TLS certificate. A BMC with its factory self-signed certificate needs V(false) or
            O(bmc.ca_path).
        type: bool
        default: true
      ca_path:
        description: PEM file with the BMC's certificate or its CA.
        type: path
      timeout:
        description: Seconds one HTTP request may take.
        type: int
        default: 30
"""
