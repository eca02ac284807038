"""lspci / lsmod / modprobe renderers.

- lspci: ``BB:DD.F <class>: <vendor> <device> (rev NN)`` (corpus/lspci/*, verbatim); ``-D`` adds the domain,
  ``-n`` prints ``BB:DD.F CCCC: VVVV:DDDD (rev NN)``, ``-nn`` adds ``[CCCC]`` after the class and
  ``[VVVV:DDDD]`` after the device: checked against the real lspci (pciutils 3.9) on the development machine.
  The ``(rev NN)`` suffix is printed only when the function has a revision (VFs in the ConnectX-4 sample have none).
- lsmod: kmod's layout as the corpus shows it (corpus/lsmod/*): header ``Module                  Size  Used by``,
  rows ``%-19s %8d  %d`` and, when the module has holders, a space and the holders joined by commas.
- modprobe: kmod's not-found error ``modprobe: FATAL: Module X not found in directory /lib/modules/<release>``
  (real modprobe on the development machine).
"""

from __future__ import annotations


def _bdf(fn: dict, domain: bool) -> str:
    addr = fn["address"]  # "0000:e2:00.0"
    return addr if domain else addr.split(":", 1)[1]


def lspci_line(fn: dict, domain: bool = False, numeric: int = 0) -> str:
    """fn: ``{"address", "class_name", "class_id" (e.g. "0200"), "vendor_name", "vendor_id", "device_name",
    "device_id", "rev"?}``. numeric: 0 names, 1 numbers only (-n), 2 both (-nn)."""
    rev = f" (rev {fn['rev']})" if fn.get("rev") else ""
    bdf = _bdf(fn, domain)
    if numeric == 1:
        return f"{bdf} {fn['class_id']}: {fn['vendor_id']}:{fn['device_id']}{rev}"
    if numeric == 2:
        return (f"{bdf} {fn['class_name']} [{fn['class_id']}]: {fn['vendor_name']} {fn['device_name']} "
                f"[{fn['vendor_id']}:{fn['device_id']}]{rev}")
    return f"{bdf} {fn['class_name']}: {fn['vendor_name']} {fn['device_name']}{rev}"


def lspci(functions: list[dict], domain: bool = False, numeric: int = 0) -> str:
    return "".join(lspci_line(fn, domain, numeric) + "\n" for fn in sorted(functions, key=lambda f: f["address"]))


def lsmod(modules: list[dict]) -> str:
    """modules: ``[{"name", "size", "refcnt", "holders": [..]}]`` in /proc/modules order (newest first)."""
    out = ["Module                  Size  Used by"]
    for m in modules:
        line = f"{m['name']:<19} {m['size']:>8}  {m['refcnt']}"
        if m.get("holders"):
            line += " " + ",".join(m["holders"])
        out.append(line)
    return "".join(line + "\n" for line in out)


def modprobe_not_found(module: str, release: str) -> str:
    return f"modprobe: FATAL: Module {module} not found in directory /lib/modules/{release}\n"
