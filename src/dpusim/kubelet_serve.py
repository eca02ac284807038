# ruff: noqa: UP031  (printf-style formats, like the rest of the twin)
"""``dpusim kubelet serve``: the twin's kubelet as a daemon (the lab's DPU containers run it under systemd).

In the sim nothing runs in the background: ``crictl`` reconciles on read (dpusim.kubelet). On a machine of its
own (the lab) this loop does the same every ``interval`` seconds and, in addition, runs a real process for each
running container whose image has a stand-in:

* DOCA Telemetry Service (``nvcr.io/nvidia/doca/doca_telemetry``): ``dpusim kubelet stand-in ID``, an HTTP
  server on the ``prometheus=`` port of dts_config.ini answering ``GET /metrics`` with the card's counters at
  scrape time (dpusim.telemetry).

When a stand-in process dies (killed, or it could not bind its port) the loop records the container as exited
with the process's exit status (``kubelet.crash``); the next reconcile restarts it (new container id, attempt
+ 1, restart count + 1) and a new process starts. When a container is no longer running (``dpusim kubelet
crash``, a changed or removed manifest, the Arm OS down) its process is stopped.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from dpusim import kubelet, state, telemetry

TWIN_PATH = str(Path(kubelet.__file__).resolve().parents[1])


def _stand_in_argv(ctr_id: str) -> list[str]:
    code = "import sys; from dpusim.kubelet_serve import stand_in; sys.exit(stand_in(sys.argv[1]))"
    return [sys.executable, "-c", code, ctr_id]


def _arm_up(node: state.Node) -> bool:
    return node.role != "dpu" or all(c.data.get("arm", {}).get("state") == "running" for c in node.cards)


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def reconcile(procs: dict[str, subprocess.Popen], root: str | None = None,
              spawn: Callable[[str], subprocess.Popen] | None = None) -> dict[str, subprocess.Popen]:
    """One pass: sync the static pods, note dead stand-ins as crashes, stop and start processes."""
    env = dict(os.environ)
    env["PYTHONPATH"] = TWIN_PATH + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    spawn = spawn or (lambda cid: subprocess.Popen(_stand_in_argv(cid), env=env, stdin=subprocess.DEVNULL))
    with state.open_node(root) as node:
        up = _arm_up(node)
        kub = kubelet.sync(node) if up else {"pods": {}}
        crashed = False
        for cid, proc in list(procs.items()):
            if proc.poll() is not None:
                del procs[cid]
                crashed = True
                try:
                    kubelet.crash(node, cid, exit_code=proc.returncode if proc.returncode >= 0 else
                                  128 - proc.returncode)
                except ValueError:
                    pass  # the container is gone already
        if crashed and up:  # restart what crashed now (restartPolicy Always), not a pass later
            kub = kubelet.sync(node)
        running = {c["id"] for c in kubelet.all_containers(kub, include_dead=False)
                   if c["state"] == "CONTAINER_RUNNING" and telemetry.is_telemetry(c)}
        for cid in list(procs):
            if cid not in running:
                _stop(procs.pop(cid))
        for cid in sorted(running - set(procs)):
            procs[cid] = spawn(cid)
    return procs


def serve(interval: float = 2.0, root: str | None = None) -> int:
    procs: dict[str, subprocess.Popen] = {}
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_a: stopping.append(1))
    try:
        while not stopping:
            try:
                reconcile(procs, root)
            except (state.StateError, OSError) as exc:  # the twin not initialised yet, a file half written
                print("dpusim kubelet serve: %s" % exc, file=sys.stderr, flush=True)
            time.sleep(interval)
    finally:
        for proc in procs.values():
            _stop(proc)
    return 0


# ---- the telemetry stand-in -------------------------------------------------------------------------------

class _Handler(BaseHTTPRequestHandler):
    root: str | None = None

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        if self.path.split("?")[0] != "/metrics":
            self.send_error(404, "only /metrics")
            return
        body = telemetry.render(state.load_node(self.root)).encode()
        self.send_response(200)
        self.send_header("Content-Type", telemetry.CONTENT_TYPE)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args) -> None:  # noqa: A002 (http.server's signature)
        return


def server_for(node: state.Node, root: str | None = None, port: int | None = None) -> ThreadingHTTPServer:
    """The HTTP server of the telemetry stand-in, bound to dts_config.ini's port (or ``port``)."""
    port = telemetry.prometheus_port(kubelet.fs_root(node)) if port is None else port
    handler = type("Handler", (_Handler,), {"root": root})
    return ThreadingHTTPServer(("0.0.0.0", port), handler)


def stand_in(ctr_id: str, root: str | None = None) -> int:
    node = state.load_node(root)
    try:
        server = server_for(node, root)
    except (telemetry.TelemetryError, OSError) as exc:
        print("doca-telemetry-service %s: %s" % (ctr_id[:13], exc), file=sys.stderr, flush=True)
        return 1
    signal.signal(signal.SIGTERM, lambda *_a: sys.exit(0))
    try:
        server.serve_forever()
    finally:
        server.server_close()
    return 0
