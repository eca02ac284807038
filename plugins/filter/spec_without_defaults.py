# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter ``bluefleet.dpu.spec_without_defaults``: a role's argument spec options without their ``default`` keys
(and without their ``description``, which the validator does not read: less to template on every host).

``ansible.builtin.validate_argument_spec`` fills every option that was not given with its ``default`` and checks
that too; a role default written as a template (``"{{ bluefleet_roce | default({}) }}"``) is text until the role
templates it, so checking it out of the role fails. Without the defaults only what was given is checked.
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError


def spec_without_defaults(options):
    if not isinstance(options, dict):
        raise AnsibleFilterError("spec_without_defaults: expected the options mapping of an argument spec, got %s"
                                 % type(options).__name__)
    out = {}
    for name, given in options.items():
        spec = {k: v for k, v in (given or {}).items() if k not in ("default", "description")}
        if isinstance(spec.get("options"), dict):
            spec["options"] = spec_without_defaults(spec["options"])
        out[name] = spec
    return out


class FilterModule:
    def filters(self):
        return {"spec_without_defaults": spec_without_defaults}
