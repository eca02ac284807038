"""The standalone kubelet of a BlueField Arm OS, as the twin models it.

On a BlueField the DOCA services (telemetry, HBN, Firefly, SNAP) are static pods: the kubelet runs
without an API server and starts whatever the YAML files in its static-pod folder declare
(``/etc/kubelet.d``; DOCA Telemetry Service guide: "DTS service starts automatically on BlueField boot
according to the .yaml file located at /etc/kubelet.d/doca_telemetry_standalone.yaml. Removing the .yaml
file from this path stops the automatic DTS boot").

The twin has no daemon in the sim, so it reconciles on read: every ``crictl`` call first runs ``sync()``,
which compares the folder with the pod records kept in the node's runtime (``runtime["kubelet"]``):

* a new manifest -> a pod sandbox (state ``SANDBOX_READY``) and one running container per
  ``spec.containers`` entry, new ids, ``createdAt`` now, attempt 0, restart count 0;
* a changed manifest (its content hash differs) -> the old pod is gone, a new one is created (new ids;
  this is how a static pod is restarted: kubelet keys a static pod by the hash of its manifest);
* a removed manifest -> its pod and containers are gone;
* a file that is not a Pod manifest (YAML that does not parse, another ``kind``) -> no pod; the reason is
  kept in ``runtime["kubelet"]["errors"]`` (a real kubelet logs it and skips the file);
* a container that crashed (``crash()``: what ``dpusim kubelet crash NAME`` does) shows ``CONTAINER_EXITED``
  until the next sync, which restarts it in place (restartPolicy Always): a new container id,
  ``attempt`` + 1 and ``io.kubernetes.container.restartCount`` + 1, same pod. ``stay_down=True`` keeps it
  exited (the kubelet's crash-loop back-off).

Reboots clear the runtime, so every pod is created anew after a reboot (new ids), as on the card.
The folder: ``$DPUSIM_KUBELET_DIR`` when set, else ``$DPUSIM_ROOT/etc/kubelet.d`` (in the sim the twin
root is also the root the roles write machine files under: ``bluefleet_fs_root``).
"""

from __future__ import annotations

import hashlib
import os
import secrets
import socket
import time
from pathlib import Path

from dpusim import state

TYPE_CHECKING = False  # typing only for type checkers: a twin tool starts faster (dpusim.tool)
if TYPE_CHECKING:
    from typing import Any

ENV_DIR = "DPUSIM_KUBELET_DIR"
SUFFIXES = (".yaml", ".yml", ".json")


def manifest_dir(node: state.Node) -> Path:
    value = os.environ.get(ENV_DIR)
    return Path(value) if value else node.root / "etc" / "kubelet.d"


def fs_root(node: state.Node) -> Path:
    """The root the services' files are under: ``/`` on a machine of its own (the lab), the twin root in the sim
    (the roles write machine files under ``bluefleet_fs_root``, which is the twin root there)."""
    return Path("/") if os.environ.get(ENV_DIR) else node.root


def node_name(node: state.Node) -> str:
    """The kubelet's node name: on a machine of its own (``DPUSIM_KUBELET_DIR`` set, the lab) its host name;
    in the sim, where every node shares this machine, the twin root's directory name."""
    if os.environ.get(ENV_DIR):
        return socket.gethostname().lower()
    return str(node.data.get("hostname") or node.root.name).lower()


def _new_id() -> str:
    return secrets.token_hex(32)


def image_id(image: str) -> str:
    """The twin's image store: an image reference always resolves to the same sha256 id."""
    return "sha256:" + hashlib.sha256(image.encode()).hexdigest()


def _state(node: state.Node) -> dict[str, Any]:
    kub = node.runtime.setdefault("kubelet", {})
    kub.setdefault("pods", {})
    kub.setdefault("errors", {})
    return kub


def _load_manifest(path: Path) -> tuple[dict[str, Any] | None, str]:
    # PyYAML is imported here, not at the top: every twin tool imports this module through crictl, and the
    # lab's GPU-host image has no PyYAML (only the DPU image, which runs the kubelet, needs it).
    try:
        import yaml
    except ImportError:
        return None, "cannot read %s: the twin's kubelet needs PyYAML (python3-yaml)" % path
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        return None, "cannot read %s: %s" % (path, str(exc).splitlines()[0])
    if not isinstance(doc, dict) or doc.get("kind") != "Pod":
        return None, "%s is not a Pod manifest (kind: %r)" % (path, doc.get("kind") if isinstance(doc, dict) else None)
    meta = doc.get("metadata") or {}
    containers = (doc.get("spec") or {}).get("containers") or []
    if not meta.get("name") or not containers:
        return None, "%s: a Pod needs metadata.name and spec.containers" % path
    for ctr in containers:
        if not isinstance(ctr, dict) or not ctr.get("name") or not ctr.get("image"):
            return None, "%s: every container needs a name and an image" % path
    return doc, ""


def _container(pod: dict[str, Any], spec: dict[str, Any], attempt: int, now: int) -> dict[str, Any]:
    return {
        "id": _new_id(),
        "name": spec["name"],
        "image": spec["image"],
        "image_ref": image_id(spec["image"]),
        "attempt": attempt,
        "restart_count": attempt,
        "state": "CONTAINER_RUNNING",
        "created_ns": now,
        "started_ns": now,
        "finished_ns": 0,
        "exit_code": 0,
        "stay_down": False,
        "hash": hashlib.sha256(repr(sorted(spec.items())).encode()).hexdigest()[:8],
        "pod_name": pod["name"],
        "pod_namespace": pod["namespace"],
        "pod_uid": pod["uid"],
        "grace": pod["grace"],
    }


def _new_pod(node: state.Node, fname: str, doc: dict[str, Any], digest: str, now: int) -> dict[str, Any]:
    meta = doc.get("metadata") or {}
    spec = doc.get("spec") or {}
    pod = {
        "file": fname,
        "hash": digest,
        "id": _new_id(),
        "uid": digest,
        "name": "%s-%s" % (meta["name"], node_name(node)),
        "namespace": meta.get("namespace") or "default",
        "attempt": 0,
        "state": "SANDBOX_READY",
        "created_ns": now,
        "labels": {str(k): str(v) for k, v in (meta.get("labels") or {}).items()},
        "annotations": {str(k): str(v) for k, v in (meta.get("annotations") or {}).items()},
        "restart_policy": spec.get("restartPolicy", "Always"),
        "grace": str(spec.get("terminationGracePeriodSeconds", 30)),
        "containers": [],
        "dead": [],
    }
    pod["annotations"].update({
        "kubernetes.io/config.hash": digest,
        "kubernetes.io/config.seen": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now / 1e9)) + "Z",
        "kubernetes.io/config.source": "file",
    })
    pod["containers"] = [_container(pod, c, 0, now) for c in spec["containers"]]
    return pod


def sync(node: state.Node, now: int | None = None) -> dict[str, Any]:
    """Bring the pod records in line with the static-pod folder (see the module docstring)."""
    now = time.time_ns() if now is None else now
    kub = _state(node)
    folder = manifest_dir(node)
    files = {}
    if folder.is_dir():
        for path in sorted(folder.iterdir()):
            if path.is_file() and path.suffix in SUFFIXES and not path.name.startswith("."):
                files[path.name] = path
    pods = kub["pods"]
    errors = {}
    for fname in list(pods):
        if fname not in files:
            del pods[fname]
    for fname, path in files.items():
        try:
            digest = hashlib.md5(path.read_bytes()).hexdigest()
        except OSError as exc:
            errors[fname] = "cannot read %s: %s" % (path, exc)
            pods.pop(fname, None)
            continue
        old = pods.get(fname)
        if old is not None and old["hash"] == digest:
            continue
        doc, problem = _load_manifest(path)
        if doc is None:
            errors[fname] = problem
            pods.pop(fname, None)
            continue
        pods[fname] = _new_pod(node, fname, doc, digest, now)
    kub["errors"] = errors
    for pod in pods.values():
        _restart_crashed(pod, now)
    _snap_reconcile(node, kub)
    return kub


def _snap_reconcile(node: state.Node, kub: dict[str, Any]) -> None:
    """SNAP's emulated NVMe namespaces follow its container (dpusim.snap: recorded on the card, seen by the host)."""
    from dpusim import snap
    snap.reconcile(node, kub, fs_root(node))


def _restart_crashed(pod: dict[str, Any], now: int) -> None:
    if pod["restart_policy"] == "Never":
        return
    for index, ctr in enumerate(pod["containers"]):
        if ctr["state"] != "CONTAINER_EXITED" or ctr["stay_down"]:
            continue
        pod["dead"] = [d for d in pod["dead"] if d["name"] != ctr["name"]] + [ctr]
        fresh = _container(pod, {"name": ctr["name"], "image": ctr["image"]}, ctr["attempt"] + 1, now)
        fresh["hash"] = ctr["hash"]
        pod["containers"][index] = fresh


def find_container(kub: dict[str, Any], name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The running container named ``name`` (or whose pod name starts with ``name``); KeyError if none."""
    for pod in kub["pods"].values():
        for ctr in pod["containers"]:
            if name in (ctr["name"], ctr["id"], ctr["id"][:13]) or pod["name"].startswith(name + "-"):
                return pod, ctr
    raise KeyError(name)


def crash(node: state.Node, name: str, exit_code: int = 1, stay_down: bool = False,
          now: int | None = None) -> dict[str, Any]:
    """The service process of container ``name`` dies (what a crash of a DOCA service looks like)."""
    now = time.time_ns() if now is None else now
    kub = sync(node, now)
    try:
        _pod, ctr = find_container(kub, name)
    except KeyError:
        raise ValueError("dpusim kubelet: no container or pod named %r; see `crictl ps -a`" % name) from None
    ctr["state"] = "CONTAINER_EXITED"
    ctr["finished_ns"] = now
    ctr["exit_code"] = exit_code
    ctr["stay_down"] = stay_down
    _snap_reconcile(node, kub)
    return ctr


def all_containers(kub: dict[str, Any], include_dead: bool) -> list[dict[str, Any]]:
    out = []
    for pod in kub["pods"].values():
        out.extend(pod["containers"])
        if include_dead:
            out.extend(pod["dead"])
    return out


def pod_of(kub: dict[str, Any], ctr: dict[str, Any]) -> dict[str, Any] | None:
    for pod in kub["pods"].values():
        if pod["uid"] == ctr["pod_uid"] and pod["name"] == ctr["pod_name"]:
            return pod
    return None


def metrics(node: state.Node, name: str, now: int | None = None) -> str:
    """What the Prometheus endpoint of telemetry container/pod ``name`` answers now (the sim has no daemon to
    scrape: the same page ``dpusim kubelet serve``'s stand-in serves). ValueError, like a refused connection,
    when the container does not run or its dts_config.ini has no Prometheus endpoint."""
    from dpusim import telemetry
    kub = sync(node, now)
    try:
        _pod, ctr = find_container(kub, name)
    except KeyError:
        raise ValueError("dpusim kubelet metrics: no running container or pod named %r (nothing listens); "
                         "see `crictl ps -a`" % name) from None
    if not telemetry.is_telemetry(ctr):
        raise ValueError("dpusim kubelet metrics: %s runs %s, not %s: it has no metrics endpoint"
                         % (ctr["name"], ctr["image"], telemetry.IMAGE_REPO))
    if ctr["state"] != "CONTAINER_RUNNING":
        raise ValueError("dpusim kubelet metrics: %s is %s: nothing listens" % (ctr["name"], ctr["state"]))
    try:
        telemetry.prometheus_port(fs_root(node))
    except telemetry.TelemetryError as exc:
        raise ValueError("dpusim kubelet metrics: %s" % exc) from None
    return telemetry.render(node)
