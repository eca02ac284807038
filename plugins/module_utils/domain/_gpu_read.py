# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The read of a GPU host's GPUs, shared by the module ``gpu_info`` and ``dpu_info``'s option ``gpu_filter`` (one
module run reads a GPU host's cards and GPUs: preflight's read).

- ``GpuInfo(runner, sections, fs_root, files_root).gather()``: the sections ``gpus``, ``topology``, ``peermem``,
  ``tool_versions`` and ``acs`` as gpu_info returns them (its RETURN), with ``read_at``, ``tools_missing`` and
  ``cmd`` (the commands of this read).
- ``closest_nics(topo)``: the nearest NIC of each GPU in ``nvidia-smi topo -m``'s matrix.

Errors are ``_tooling.ToolError`` naming the command or file. No AnsibleModule import.
"""

from __future__ import annotations

import time

from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._tooling import ToolError, ToolReader, unavailable

# Each section imports its parser and domain code in the method that reads it (as dpu_info's sections do): a module
# run imports and compiles every file it imports, afresh each run, and reads only the sections asked for.

SECTIONS = ("gpus", "topology", "peermem", "tool_versions", "acs")
# acs is asked for by name: the default stays what it was before the section existed.
DEFAULT_SECTIONS = tuple(s for s in SECTIONS if s != "acs")

# nvidia-smi topo legend, nearest first (corpus/nvidia-smi/topo-mp-L40S-10nics.txt).
LINK_RANK = ("PIX", "PXB", "PHB", "NODE", "SYS")

# nvidia-smi on a machine without a GPU prints this and exits non-zero. Not in the corpus: the
# sentence as the driver prints it, matched as a substring.
NO_DEVICES = "No devices were found"


def closest_nics(topo):
    """GPU label -> the nearest NIC by LINK_RANK (first listed on a tie), or None."""
    nic_labels = [d for d in topo.get("devices", []) if d.startswith("NIC")]
    out = {}
    for gpu in [d for d in topo.get("devices", []) if d.startswith("GPU")]:
        row = topo["matrix"].get(gpu, {})
        best = None
        for nic in nic_labels:
            link = row.get(nic)
            if link not in LINK_RANK:
                continue
            if best is None or LINK_RANK.index(link) < LINK_RANK.index(best[1]):
                best = (nic, link)
        out[gpu] = None if best is None else {"nic": best[0], "device": topo.get("nics", {}).get(best[0]),
                                              "link": best[1]}
    return out


class GpuInfo(ToolReader):
    def __init__(self, runner, sections, fs_root="/", files_root=None):
        super().__init__(runner)
        self.sections = set(sections)
        self.fs_root = fs_root
        self.files_root = files_root or fs_root
        self.smi_version = None

    def gpus(self):
        from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._nvidia_smi import (
            PARSERS as NVIDIA_SMI_PARSERS,
        )

        result = self.run(["nvidia-smi"], "list GPUs with nvidia-smi", allow_text=NO_DEVICES)
        if result is None:
            return unavailable("nvidia-smi not found on PATH")
        if NO_DEVICES in result.stdout + result.stderr:
            return {"available": True, "driver_version": None, "cuda_version": None, "devices": [],
                    "msg": "no GPU found: nvidia-smi says %s" % NO_DEVICES}
        q = self.parse(NVIDIA_SMI_PARSERS, "nvidia-smi", result, "nvidia-smi")
        self.smi_version = q.get("smi_version")
        devices = [{"index": g.get("index"), "name": g.get("name"), "bus_id": g.get("bus_id"),
                    "memory_total_mib": g.get("memory_total_mib"), "persistence_mode": g.get("persistence_mode")}
                   for g in q.get("gpus", [])]
        out = {"available": True, "driver_version": q.get("driver_version"), "cuda_version": q.get("cuda_version"),
               "devices": devices}
        if not devices:
            out["msg"] = "no GPU found in the nvidia-smi table"
        return out

    def topology(self):
        from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._nvidia_smi import (
            PARSERS as NVIDIA_SMI_PARSERS,
        )

        result = self.run(["nvidia-smi", "topo", "-m"], "read the GPU-NIC topology with nvidia-smi topo -m",
                          allow_text=NO_DEVICES)
        if result is None:
            return unavailable("nvidia-smi not found on PATH")
        if NO_DEVICES in result.stdout + result.stderr:
            return {"available": True, "matrix": {}, "nics": {}, "cpu_affinity": {}, "numa_affinity": {},
                    "closest_nic": {}}
        topo = self.parse(NVIDIA_SMI_PARSERS, "nvidia-smi-topo", result, "nvidia-smi topo -m")
        return {"available": True, "matrix": topo.get("matrix", {}), "nics": topo.get("nics", {}),
                "cpu_affinity": topo.get("cpu_affinity", {}), "numa_affinity": topo.get("numa_affinity", {}),
                "closest_nic": closest_nics(topo)}

    def peermem(self):
        """peermem's read (module_utils.domain._peermem); lsmod missing leaves ``loaded`` null, an unreadable
        modules-load.d file ``persistent`` null with ``conf_error``."""
        from ansible_collections.bluefleet.dpu.plugins.module_utils.domain._peermem import (
            CONF,
            MODULE,
            conf_lists_module,
            path_under,
            read_registration,
        )
        from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._lsmod import PARSERS as LSMOD_PARSERS

        registered, version, path = read_registration(self.fs_root)
        conf = path_under(self.files_root, CONF)
        out = {"registered": registered, "version": version, "sysfs_path": path, "sysfs_root": self.fs_root,
               "conf_path": conf, "conf_root": self.files_root}
        try:
            out["persistent"] = conf_lists_module(conf)
        except ToolError as exc:
            out.update({"persistent": None, "conf_error": exc.msg})
        result = self.run(["lsmod"], "list kernel modules with lsmod")
        if result is None:
            out.update({"available": False, "reason": "lsmod not found on PATH", "loaded": None})
            return out
        modules = self.parse(LSMOD_PARSERS, "lsmod", result, "lsmod")["modules"]
        out.update({"available": True, "loaded": MODULE in modules})
        return out

    def acs(self):
        """pci_acs's read (module_utils.domain._pci_acs): the ACS capability of every device and the unit; a
        failed lspci makes the section unavailable, an unreadable unit sets ``unit_error``."""
        from ansible_collections.bluefleet.dpu.plugins.module_utils.domain._pci_acs import (
            LSPCI,
            LSPCI_WHAT,
            UNIT,
            acs_view,
            devices_of,
            read_unit,
        )
        from ansible_collections.bluefleet.dpu.plugins.module_utils.domain._peermem import path_under

        unit_path = path_under(self.files_root, UNIT)
        out = {"root": self.files_root, "unit_path": unit_path}
        try:
            out["unit"] = read_unit(unit_path)
        except ToolError as exc:
            out.update({"unit": None, "unit_error": exc.msg})
        try:
            result = self.run(LSPCI, LSPCI_WHAT)
            if result is None:
                return dict(out, **unavailable("lspci not found on PATH"))
            out["devices"] = acs_view(devices_of(result))
        except ToolError as exc:
            return dict(out, **unavailable(exc.msg))
        out["available"] = True
        return out

    def gather(self):
        want = self.sections
        out = {"changed": False, "filter": [s for s in SECTIONS if s in want], "read_at": time.time()}
        gpus = self.gpus() if "gpus" in want else None
        topo = self.topology() if "topology" in want else None
        if gpus is not None:
            if gpus.get("msg"):
                out["msg"] = gpus.pop("msg")
            elif not gpus["available"]:
                out["msg"] = "nvidia-smi not found on PATH: install the NVIDIA driver to list the GPUs"
            if topo is not None and topo["available"]:
                for dev in gpus.get("devices", []):
                    dev["closest_nic"] = topo["closest_nic"].get("GPU%s" % dev["index"])
            out["gpus"] = gpus
        if topo is not None:
            out["topology"] = topo
        if "peermem" in want:
            out["peermem"] = self.peermem()
        if "acs" in want:
            out["acs"] = self.acs()
        if "tool_versions" in want:
            versions = {}
            if "nvidia-smi" not in self.missing and (gpus is not None or topo is not None):
                versions["nvidia-smi"] = self.smi_version
            if "peermem" in want and "lsmod" not in self.missing:
                versions["lsmod"] = None
            if "acs" in want and "lspci" not in self.missing:
                versions["lspci"] = None
            out["tool_versions"] = versions
        out["tools_missing"] = list(self.missing)
        out["cmd"] = [list(argv) for argv in self.runner.cmd]
        return out
