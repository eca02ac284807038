# ruff: noqa: UP031  (printf-style formats on purpose: they mirror the real tool's formats)
"""``crictl`` of the BlueField's standalone kubelet + containerd: ``ps``, ``pods``, ``images``, ``exec``,
``--version``.

Layouts:
* ``ps -o json``: shared/corpus/crictl/bf-doca-hbn-crictl-ps-o-json-fixture.txt (verbatim fixture of a DOCA
  HBN static pod): ListContainersResponse as protobuf JSON (2-space indent, defaults emitted, an empty map
  printed as ``{`` newline, indent, ``}``), fields in proto order; ``image.image`` is the image id (sha256),
  as the kubelet/containerd report it.
* ``pods -o json``: ListPodSandboxResponse ``items`` in the same encoding; fields in the order of the CRI
  API ``PodSandbox`` / ``PodSandboxMetadata`` messages (k8s.io/cri-api runtime/v1 api.proto). No capture.
* ``images -o json``: ListImagesResponse ``images`` (CRI ``Image``: id, repoTags, repoDigests, size as a
  string, uid null, username, spec null, pinned). No capture.
* Tables: cri-tools cmd/crictl/container.go ``OutputContainers`` and sandbox.go ``OutputPodSandboxes``
  (github.com/kubernetes-sigs/cri-tools, commit 0145dc7fde9e7be716aa3c9fe490934670babcaf):
  columns CONTAINER IMAGE CREATED STATE NAME ATTEMPT POD ID POD NAMESPACE / POD ID CREATED STATE NAME
  NAMESPACE ATTEMPT RUNTIME, written through text/tabwriter (minwidth 20, tabwidth 1, padding 3, ' ');
  ids truncated to 13 characters, a sha256 image id to 13 after ``sha256:``; CREATED is go-units
  HumanDuration + " ago"; states Running/Exited/Created/Unknown and Ready/NotReady; RUNTIME ``(default)``
  for an empty runtime handler.
* Filters (same files): ``ps`` lists running containers unless ``-a`` or ``--state``; ``--name`` is a
  regular expression (re.search) on the container name (``pods``: on the pod name); results newest first.

* ``exec [-i] [-t] [-s] [--timeout N] CONTAINER-ID COMMAND [ARG...]``: cri-tools cmd/crictl/exec.go (same
  commit): the first argument is the container id (a unique prefix is enough: containerd's container store looks
  ids up by truncated index), the rest is the command; fewer than two arguments print the subcommand help. The
  CRI side is containerd's pkg/cri/server container_exec.go / container_execsync.go: an unknown id fails with
  "failed to find container in store", a container that is not running with "container is in <STATE> state";
  crictl reports an error as ``FATA[0000] execing command in container <ID>: <error>`` (logrus.Fatal, exit 1),
  also when the command exits non-zero ("command terminated with exit code N", client-go remotecommand).
  What runs inside: the programs of the service's image that the twin models (``IMAGE_PROGRAMS``: FRR's vtysh
  in doca-hbn, linuxptp's pmc in doca-firefly), answered by the same twin tools; any other program is the
  OCI runtime's "executable file not found in $PATH".

Every call first reconciles the static-pod folder (dpusim.kubelet.sync).
"""

from __future__ import annotations

import json
import re
import time

from dpusim import kubelet, state
from dpusim.tools._common import ToolExit, check_arm_up, emit, pop_flag, pop_value, run_tool

TYPE_CHECKING = False  # typing only for type checkers: a twin tool starts faster (dpusim.tool)
if TYPE_CHECKING:
    from typing import Any

NAMES = ("crictl",)
VERSION = "v1.28.0"
CONTAINER_STATES = {"created": "CONTAINER_CREATED", "running": "CONTAINER_RUNNING",
                    "exited": "CONTAINER_EXITED", "unknown": "CONTAINER_UNKNOWN"}
STATE_WORDS = {"CONTAINER_CREATED": "Created", "CONTAINER_RUNNING": "Running",
               "CONTAINER_EXITED": "Exited", "CONTAINER_UNKNOWN": "Unknown"}
POD_WORDS = {"SANDBOX_READY": "Ready", "SANDBOX_NOTREADY": "NotReady"}


# ---- protobuf-style JSON (jsonpb, Indent "  ", EmitDefaults) -------------------------------------------------

def to_json(value: Any, indent: str = "") -> str:
    inner = indent + "  "
    if isinstance(value, dict):
        if not value:
            return "{\n" + indent + "}"
        items = ['%s%s: %s' % (inner, json.dumps(k), to_json(v, inner)) for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + indent + "}"
    if isinstance(value, list):
        if not value:
            return "[\n" + indent + "]"
        return "[\n" + ",\n".join(inner + to_json(v, inner) for v in value) + "\n" + indent + "]"
    return json.dumps(value)


def container_json(ctr: dict[str, Any], pod: dict[str, Any] | None) -> dict[str, Any]:
    return {
        "id": ctr["id"],
        "podSandboxId": pod["id"] if pod else "",
        "metadata": {"name": ctr["name"], "attempt": ctr["attempt"]},
        "image": {"image": ctr["image_ref"], "annotations": {}},
        "imageRef": ctr["image_ref"],
        "state": ctr["state"],
        "createdAt": str(ctr["created_ns"]),
        "labels": {
            "io.kubernetes.container.name": ctr["name"],
            "io.kubernetes.pod.name": ctr["pod_name"],
            "io.kubernetes.pod.namespace": ctr["pod_namespace"],
            "io.kubernetes.pod.uid": ctr["pod_uid"],
        },
        "annotations": {
            "io.kubernetes.container.hash": ctr["hash"],
            "io.kubernetes.container.restartCount": str(ctr["restart_count"]),
            "io.kubernetes.container.terminationMessagePath": "/dev/termination-log",
            "io.kubernetes.container.terminationMessagePolicy": "File",
            "io.kubernetes.pod.terminationGracePeriod": ctr["grace"],
        },
    }


def pod_json(pod: dict[str, Any]) -> dict[str, Any]:
    labels = dict(pod["labels"])
    labels.update({"io.kubernetes.pod.name": pod["name"], "io.kubernetes.pod.namespace": pod["namespace"],
                   "io.kubernetes.pod.uid": pod["uid"]})
    return {
        "id": pod["id"],
        "metadata": {"name": pod["name"], "uid": pod["uid"], "namespace": pod["namespace"],
                     "attempt": pod["attempt"]},
        "state": pod["state"],
        "createdAt": str(pod["created_ns"]),
        "labels": dict(sorted(labels.items())),
        "annotations": dict(sorted(pod["annotations"].items())),
        "runtimeHandler": "",
    }


# ---- table helpers ---------------------------------------------------------------------------------------

def human_duration(seconds: float) -> str:
    """go-units HumanDuration."""
    secs = int(seconds)
    if secs < 1:
        return "Less than a second"
    if secs == 1:
        return "1 second"
    if secs < 60:
        return "%d seconds" % secs
    minutes = int(seconds / 60)
    if minutes == 1:
        return "About a minute"
    if minutes < 60:
        return "%d minutes" % minutes
    hours = int(seconds / 3600 + 0.5)
    if hours == 1:
        return "About an hour"
    if hours < 48:
        return "%d hours" % hours
    if hours < 24 * 7 * 2:
        return "%d days" % (hours // 24)
    if hours < 24 * 30 * 2:
        return "%d weeks" % (hours // 24 // 7)
    if hours < 24 * 365 * 2:
        return "%d months" % (hours // 24 // 30)
    return "%d years" % (int(seconds / 3600) // 24 // 365)


def tabwrite(rows: list[list[str]], minwidth: int = 20, padding: int = 3) -> str:
    """text/tabwriter with cells joined by tabs: every cell but the last of a row is padded."""
    if not rows:
        return ""
    ncols = max(len(r) for r in rows)
    widths = [0] * ncols
    for row in rows:
        for i, cell in enumerate(row[:-1]):
            widths[i] = max(widths[i], len(cell))
    widths = [max(minwidth, w + padding) for w in widths]
    out = []
    for row in rows:
        cells = [cell.ljust(widths[i]) for i, cell in enumerate(row[:-1])] + [row[-1]]
        out.append("".join(cells) + "\n")
    return "".join(out)


def trunc(text: str, prefix: str = "") -> str:
    body = text[len(prefix):] if prefix and text.startswith(prefix) else text
    return body[:13]


def ago(ns: int) -> str:
    return human_duration((time.time_ns() - ns) / 1e9) + " ago"


# ---- commands ---------------------------------------------------------------------------------------------

def _output(argv: list[str]) -> str:
    out = pop_value(argv, "-o", "--output") or "table"
    if out not in ("json", "table"):
        raise ToolExit('FATA[0000] unsupported output format "%s"' % out, rc=1, stream="stderr")
    return out


def _regex(value: str | None) -> re.Pattern[str] | None:
    if not value:
        return None
    try:
        return re.compile(value)
    except re.error as exc:
        raise ToolExit("FATA[0000] invalid regular expression %r: %s" % (value, exc), rc=1, stream="stderr") from None


def cmd_ps(argv: list[str], kub: dict[str, Any]) -> str:
    show_all = pop_flag(argv, "-a", "--all")
    quiet = pop_flag(argv, "-q", "--quiet")
    no_trunc = pop_flag(argv, "--no-trunc")
    name_re = _regex(pop_value(argv, "--name"))
    pod_id = pop_value(argv, "-p", "--pod")
    want_state = pop_value(argv, "-s", "--state")
    want_id = pop_value(argv, "--id")
    output = _output(argv)
    if want_state is not None and want_state.lower() not in CONTAINER_STATES:
        raise ToolExit("FATA[0000] listing containers: --state should be one of created, running, exited or unknown",
                       rc=1, stream="stderr")
    ctrs = []
    for ctr in kubelet.all_containers(kub, include_dead=True):
        pod = kubelet.pod_of(kub, ctr)
        if want_state is not None:
            if ctr["state"] != CONTAINER_STATES[want_state.lower()]:
                continue
        elif not show_all and ctr["state"] != "CONTAINER_RUNNING":
            continue
        if name_re is not None and not name_re.search(ctr["name"]):
            continue
        if pod_id and (pod is None or not pod["id"].startswith(pod_id)):
            continue
        if want_id and not ctr["id"].startswith(want_id):
            continue
        ctrs.append((ctr, pod))
    ctrs.sort(key=lambda cp: cp[0]["created_ns"], reverse=True)
    if output == "json":
        return to_json({"containers": [container_json(c, p) for c, p in ctrs]}) + "\n"
    if quiet:
        return "".join(c["id"] + "\n" for c, _p in ctrs)
    rows = [["CONTAINER", "IMAGE", "CREATED", "STATE", "NAME", "ATTEMPT", "POD ID", "POD", "NAMESPACE"]]
    for ctr, pod in ctrs:
        cid = ctr["id"] if no_trunc else trunc(ctr["id"])
        pid = (pod["id"] if no_trunc else trunc(pod["id"])) if pod else ""
        image = ctr["image_ref"] if no_trunc else trunc(ctr["image_ref"], "sha256:")
        rows.append([cid, image, ago(ctr["created_ns"]), STATE_WORDS[ctr["state"]], ctr["name"],
                     str(ctr["attempt"]), pid, ctr["pod_name"], ctr["pod_namespace"]])
    return tabwrite(rows)


def cmd_pods(argv: list[str], kub: dict[str, Any]) -> str:
    quiet = pop_flag(argv, "-q", "--quiet")
    no_trunc = pop_flag(argv, "--no-trunc")
    name_re = _regex(pop_value(argv, "--name"))
    ns_re = _regex(pop_value(argv, "--namespace"))
    want_state = pop_value(argv, "-s", "--state")
    want_id = pop_value(argv, "--id")
    output = _output(argv)
    pods = []
    for pod in kub["pods"].values():
        if name_re is not None and not name_re.search(pod["name"]):
            continue
        if ns_re is not None and not ns_re.search(pod["namespace"]):
            continue
        if want_state and POD_WORDS[pod["state"]].lower() != want_state.lower():
            continue
        if want_id and not pod["id"].startswith(want_id):
            continue
        pods.append(pod)
    pods.sort(key=lambda p: p["created_ns"], reverse=True)
    if output == "json":
        return to_json({"items": [pod_json(p) for p in pods]}) + "\n"
    if quiet:
        return "".join(p["id"] + "\n" for p in pods)
    rows = [["POD ID", "CREATED", "STATE", "NAME", "NAMESPACE", "ATTEMPT", "RUNTIME"]]
    for pod in pods:
        rows.append([pod["id"] if no_trunc else trunc(pod["id"]), ago(pod["created_ns"]), POD_WORDS[pod["state"]],
                     pod["name"], pod["namespace"], str(pod["attempt"]), "(default)"])
    return tabwrite(rows)


def cmd_images(argv: list[str], kub: dict[str, Any]) -> str:
    output = _output(argv)
    if output != "json":
        raise ToolExit("dpusim: crictl images prints only -o json in the twin", rc=1, stream="stderr")
    seen: dict[str, dict[str, Any]] = {}
    for ctr in kubelet.all_containers(kub, include_dead=True):
        ref = ctr["image"]
        repo, digest = (ref.split("@", 1) + [""])[:2] if "@" in ref else (ref, "")
        entry = seen.setdefault(ctr["image_ref"], {
            "id": ctr["image_ref"], "repoTags": [], "repoDigests": [], "size": "104857600",
            "uid": None, "username": "", "spec": None, "pinned": False})
        if digest:
            entry["repoDigests"].append(ref)
        else:
            entry["repoTags"].append(repo)
            entry["repoDigests"].append("%s@%s" % (repo.rsplit(":", 1)[0], ctr["image_ref"]))
    return to_json({"images": list(seen.values())}) + "\n"


# Programs inside a service's container that the twin answers (container name -> program -> dpusim.tools module).
IMAGE_PROGRAMS = {"doca-hbn": {"vtysh": "vtysh"}, "doca-firefly": {"pmc": "pmc"}}
EXEC_USAGE = ("NAME:\n   crictl exec - Run a command in a running container\n\nUSAGE:\n"
              "   crictl exec [command options] [CONTAINER-ID] COMMAND [ARG...]\n")


def exec_target(argv: list[str], kub: dict[str, Any]) -> tuple[dict[str, Any], str, list[str]]:
    """(container, the id as given, command argv) of ``crictl exec``; ToolExit as crictl / containerd answer.
    Flags come before the container id (urfave/cli stops at the first argument); the command keeps its own."""
    args = list(argv)
    while args and args[0].startswith("-"):
        flag = args.pop(0)
        if flag == "--":
            break
        name, _eq, value = flag.partition("=")
        if name in ("-i", "--interactive", "-t", "--tty", "-s", "--sync", "-it", "-ti"):
            continue
        if name == "--timeout":
            value = value or (args.pop(0) if args else "")
            if not value.lstrip("-").isdigit():
                raise ToolExit('FATA[0000] invalid value "%s" for flag -timeout: parse error' % value, rc=1,
                               stream="stderr")
            continue
        raise ToolExit("FATA[0000] flag provided but not defined: %s" % name, rc=1, stream="stderr")
    if len(args) < 2:
        raise ToolExit(EXEC_USAGE, rc=0)
    wanted, command = args[0], args[1:]
    found = [c for c in kubelet.all_containers(kub, include_dead=True) if c["id"].startswith(wanted)]
    if len(found) != 1:
        why = "not found" if not found else "ambiguous ID %r" % wanted
        raise ToolExit("FATA[0000] execing command in container %s: rpc error: code = NotFound desc = failed to find "
                       "container in store: %s" % (wanted, why), rc=1, stream="stderr")
    ctr = found[0]
    if ctr["state"] != "CONTAINER_RUNNING":
        raise ToolExit("FATA[0000] execing command in container %s: rpc error: code = Unknown desc = container is in "
                       "%s state" % (wanted, ctr["state"]), rc=1, stream="stderr")
    return ctr, wanted, command


def run_in_container(ctr: dict[str, Any], wanted: str, command: list[str]) -> int:
    program = command[0].rsplit("/", 1)[-1]
    module = IMAGE_PROGRAMS.get(ctr["name"], {}).get(program)
    if module is None:
        raise ToolExit('FATA[0000] execing command in container %s: OCI runtime exec failed: exec failed: unable to '
                       'start container process: exec: "%s": executable file not found in $PATH: unknown'
                       % (wanted, command[0]), rc=1, stream="stderr")
    import importlib

    rc = importlib.import_module("dpusim.tools." + module).main(command[1:], program)
    if rc:
        raise ToolExit("FATA[0000] execing command in container %s: command terminated with exit code %d"
                       % (wanted, rc), rc=1, stream="stderr")
    return 0


COMMANDS = {"ps": cmd_ps, "pods": cmd_pods, "images": cmd_images, "exec": None}


def body(argv: list[str], prog: str) -> int:
    argv = list(argv)
    if pop_flag(argv, "-v", "--version"):
        emit("%s version %s\n" % (prog, VERSION))
        return 0
    if not argv or argv[0] not in COMMANDS:
        raise ToolExit("%s: the twin knows: %s" % (prog, ", ".join(COMMANDS)), rc=1, stream="stderr")
    cmd = argv.pop(0)
    with state.open_node() as node:
        check_arm_up(node)
        if node.role != "dpu":
            # no containerd on a GPU host (the message crictl prints when the socket is missing, as reported in
            # cri-tools issues)
            raise ToolExit('FATA[0000] validate service connection: validate CRI v1 runtime API for endpoint '
                           '"unix:///run/containerd/containerd.sock": rpc error: code = Unavailable desc = '
                           'connection error: desc = "transport: Error while dialing: dial unix '
                           '/run/containerd/containerd.sock: connect: no such file or directory"',
                           rc=1, stream="stderr")
        kub = kubelet.sync(node)
        if cmd == "exec":
            ctr, wanted, command = exec_target(argv, kub)
        else:
            text = COMMANDS[cmd](argv, kub)
    if cmd == "exec":  # the program runs after the node is released: it reads the node itself
        return run_in_container(ctr, wanted, command)
    emit(text)
    return 0


def main(argv: list[str], prog: str) -> int:
    return run_tool(body, argv, prog)
