"""The mlx5 driver of a twin DPU's Arm OS: ``/etc/mellanox/mlnx-bf.conf`` and the driver restart that reads it.

What the real BlueField does (hardware-facts.md section 2/3, BSP 4.6 "IPsec Functionality"): the Arm's driver
start-up (``openibd``, with the BlueField ``mlnx-bf`` hooks) reads ``/etc/mellanox/mlnx-bf.conf``; with
``IPSEC_FULL_OFFLOAD="yes"`` it puts each uplink's eswitch into IPsec full mode (MLNX_OFED's compat sysfs
``/sys/class/net/<uplink>/compat/devlink/ipsec_mode`` reads ``full``; ``none`` otherwise). Editing the file changes
nothing until ``/etc/init.d/openibd restart`` (or a reboot).

The twin models that:

- ``dpusim init --role dpu`` writes ``$DPUSIM_ROOT/etc/mellanox/mlnx-bf.conf`` with the values NVIDIA's DPF
  (doca-platform) DPUFlavor examples give it (``ALLOW_SHARED_RQ="no"``, ``IPSEC_FULL_OFFLOAD="no"``,
  ``ENABLE_ESWITCH_MULTIPORT="yes"``, ``RDMA_SET_NETNS_EXCLUSIVE="no"``; a DPUFlavor ``configFiles`` entry for
  ``/etc/mellanox/mlnx-bf.conf``, permissions 0644), and ``$DPUSIM_ROOT/etc/init.d/openibd`` (the ``openibd`` tool
  front-end) so that roles run ``<fs root>/etc/init.d/openibd restart`` as on the card.
- The loaded driver's view lives in the node's runtime (``runtime["linux"]["mlx5_driver"]``), so a reboot drops it.
  After a boot, the first twin call on the node loads it from the file as it is then (``ensure_loaded``, called from
  ``state.open_node``): an edit made after that stays pending until ``openibd restart`` (``restart``) or a reboot.
- A restart reloads mlx5: the eswitch of every function goes back to its boot mode (switchdev on the Arm), the
  port-function states and per-netdev runtime settings (ethtool, QoS) are lost; ``restarts`` counts restarts
  (persistent, for tests: "restart only when the setting changed").
- ``<root>/sys/class/net/<uplink>/compat/devlink/ipsec_mode`` is rendered from the loaded value on every save.

No capture of ``openibd``'s transcript on a BlueField exists in the corpus; its two status lines follow the
MLNX_OFED init script's output as published in public install notes (``Unloading HCA driver:`` /
``Loading HCA driver and Access Layer:``, status ``[  OK  ]`` at column 60 when not on a terminal).
"""

from __future__ import annotations

import re
import stat
import sys
from pathlib import Path

TYPE_CHECKING = False  # typing only for type checkers: a twin tool starts faster (dpusim.tool)
if TYPE_CHECKING:
    from typing import Any

CONF = Path("etc/mellanox/mlnx-bf.conf")
INIT_SCRIPT = Path("etc/init.d/openibd")
DEFAULT_CONF = ('ALLOW_SHARED_RQ="no"\n'
                'IPSEC_FULL_OFFLOAD="no"\n'
                'ENABLE_ESWITCH_MULTIPORT="yes"\n'
                'RDMA_SET_NETNS_EXCLUSIVE="no"\n')
_LINE_RE = re.compile(r"""^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=(?:"([^"]*)"|'([^']*)'|(\S*))\s*(?:#.*)?$""")
SCRIPT_TEMPLATE = """#!{python}
# dpusim front-end for /etc/init.d/openibd; written by `dpusim init --role dpu`.
import sys
sys.path.insert(0, {src!r})
from dpusim.tool import run
sys.exit(run("openibd", sys.argv[1:]))
"""


def conf_path(node: Any) -> Path:
    return node.root / CONF


def read_conf(node: Any) -> dict[str, str]:
    """``KEY=value`` assignments of mlnx-bf.conf as the shell would see them (last one wins); {} if absent."""
    try:
        text = conf_path(node).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return {}
    out = {}
    for line in text.splitlines():
        match = _LINE_RE.match(line)
        if match:
            value = next((g for g in match.groups()[1:] if g is not None), "")
            out[match.group(1)] = value
    return out


def _from_conf(node: Any) -> dict[str, Any]:
    conf = read_conf(node)
    return {"ipsec_mode": "full" if conf.get("IPSEC_FULL_OFFLOAD", "no").lower() == "yes" else "none"}


def init_files(node: Any) -> None:
    """The DPU's mlnx-bf.conf (kept when it exists) and the openibd front-end under the node root."""
    if node.role != "dpu":
        return
    path = conf_path(node)
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(DEFAULT_CONF, encoding="utf-8")
        path.chmod(0o644)
    script = node.root / INIT_SCRIPT
    script.parent.mkdir(parents=True, exist_ok=True)
    src = str(Path(__file__).resolve().parents[1])
    script.write_text(SCRIPT_TEMPLATE.format(python=sys.executable, src=src), encoding="utf-8")
    script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def _runtime(node: Any) -> dict[str, Any]:
    return node.runtime.setdefault("linux", {})


def ensure_loaded(node: Any) -> bool:
    """After a boot (runtime empty), the driver loads with what the file says now; later edits wait.
    True when it loaded now (the caller saves the node even on a read-only open)."""
    if node.role != "dpu" or not node.cards:
        return False
    fresh = "mlx5_driver" not in _runtime(node)
    if fresh:
        if not conf_path(node).exists() or not (node.root / INIT_SCRIPT).exists():
            init_files(node)
        _runtime(node)["mlx5_driver"] = _from_conf(node)
    render_sysfs(node)
    return fresh


def loaded(node: Any) -> dict[str, Any]:
    """What the running driver uses: ``{"ipsec_mode": "full"|"none"}``."""
    ensure_loaded(node)
    return dict(_runtime(node).get("mlx5_driver", {"ipsec_mode": "none"}))


def pending(node: Any) -> bool:
    """True when mlnx-bf.conf asks for something the running driver does not use."""
    return node.role == "dpu" and loaded(node) != _from_conf(node)


def restart(node: Any) -> dict[str, Any]:
    """``openibd restart``: unload and load mlx5 with the file as it is now."""
    rt = _runtime(node)
    for key in ("eswitch", "port_fn_state", "params"):
        rt.pop(key, None)
    node.runtime.pop("netdevs", None)
    linux = node.data.setdefault("linux", {})
    linux["driver_restarts"] = int(linux.get("driver_restarts", 0)) + 1
    if node.role != "dpu":
        return {}
    rt["mlx5_driver"] = _from_conf(node)
    render_sysfs(node)
    return dict(rt["mlx5_driver"])


def restarts(node: Any) -> int:
    return int(node.data.get("linux", {}).get("driver_restarts", 0))


def render_sysfs(node: Any) -> None:
    """``<root>/sys/class/net/<uplink>/compat/devlink/ipsec_mode`` for every uplink of the node's cards."""
    mode = _runtime(node).get("mlx5_driver", {}).get("ipsec_mode", "none")
    for card in node.cards:
        for fn in node.card_entry(card)["functions"]:
            path = node.root / "sys/class/net" / fn["uplink"] / "compat/devlink/ipsec_mode"
            try:
                if path.read_text() == mode + "\n":
                    continue
            except OSError:
                pass
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(mode + "\n")
