# ruff: noqa: UP031  (printf-style formats, as in the rest of the twin)
"""``dpusim bmc serve``: the twin BMC over HTTP(S) (stdlib ThreadingHTTPServer).

TLS: ``--tls`` makes a self-signed certificate at start with ``openssl req`` (as a fresh BMC
does; clients use ``validate_certs: false`` or pin the file written to ``--cert-out``).
"""

from __future__ import annotations

import contextlib
import http.server
import os
import shutil
import ssl
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from dpusim.bmc import service

TYPE_CHECKING = False  # typing only for type checkers: a twin tool starts faster (dpusim.tool)
if TYPE_CHECKING:
    from typing import Any

MAX_BODY = 256 * 1024 * 1024  # more than UpdateService.MaxImageSizeBytes (200 MiB)


def make_handler(bmc: service.Bmc) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "dpusim-bmc"
        sys_version = ""

        def log_message(self, fmt: str, *args: Any) -> None:  # quiet unless DPUSIM_BMC_LOG is set
            if os.environ.get("DPUSIM_BMC_LOG"):
                sys.stderr.write("%s - %s\n" % (self.address_string(), fmt % args))

        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            if length > MAX_BODY:
                self.send_error(413)
                return
            body = self.rfile.read(length) if length else b""
            try:
                resp = bmc.handle(self.command, self.path, dict(self.headers.items()), body,
                                  client=self.client_address[0])
            except service.Away:
                self.close_connection = True
                with contextlib.suppress(OSError):
                    self.connection.shutdown(2)
                return
            payload = resp.payload() if self.command != "HEAD" else b""
            self.send_response(resp.code)
            for key, value in resp.headers.items():
                self.send_header(key, value)
            if resp.body is not None:
                self.send_header("Content-Type", "application/json; charset=utf-8")
                self.send_header("OData-Version", "4.0")
            self.send_header("Content-Length", str(len(resp.payload()) if self.command == "HEAD" else len(payload)))
            self.end_headers()
            if payload:
                self.wfile.write(payload)

        do_GET = do_POST = do_PATCH = do_DELETE = do_PUT = do_HEAD = _serve

    return Handler


def self_signed(directory: Path, host: str = "127.0.0.1") -> tuple[Path, Path]:
    if not shutil.which("openssl"):
        raise ValueError("dpusim bmc serve --tls: openssl is not installed; install it or serve without --tls")
    cert, key = directory / "bmc.crt", directory / "bmc.key"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "30",
                    "-subj", "/CN=dpusim-bmc", "-addext", "subjectAltName=%s" % _san(host),
                    "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True, timeout=60)
    return cert, key


def _san(host: str) -> str:
    names = ["DNS:localhost", "IP:127.0.0.1"]
    if host and host not in ("0.0.0.0", "127.0.0.1", "localhost", "::"):
        names.append(("IP:%s" if host.replace(".", "").isdigit() or ":" in host else "DNS:%s") % host)
    return ",".join(names)


def build_server(bmc: service.Bmc, host: str, port: int, tls: bool = False,
                 cert_out: str | None = None) -> http.server.ThreadingHTTPServer:
    httpd = http.server.ThreadingHTTPServer((host, port), make_handler(bmc))
    httpd.daemon_threads = True
    if tls:
        with tempfile.TemporaryDirectory(prefix="dpusim-bmc-tls-") as tmp:
            cert, key = self_signed(Path(tmp), host)
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(str(cert), str(key))
            if cert_out:
                shutil.copyfile(cert, cert_out)
        httpd.socket = ctx.wrap_socket(httpd.socket, server_side=True)
    return httpd


def parse_listen(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError("dpusim bmc serve: --listen %r is not HOST:PORT (e.g. 127.0.0.1:8443)" % text)
    return host or "127.0.0.1", int(port)


def serve(root: str, listen: str, user: str, password: str, firmware: str, tls: bool,
          cert_out: str | None = None, ready: threading.Event | None = None) -> int:
    host, port = parse_listen(listen)
    bmc = service.Bmc(root, user=user, password=password, firmware=firmware)
    httpd = build_server(bmc, host, port, tls=tls, cert_out=cert_out)
    print("dpusim bmc: serving %s://%s:%d/redfish/v1 for %s" % ("https" if tls else "http", host,
                                                                 httpd.server_address[1], root), flush=True)
    if ready is not None:
        ready.set()
    try:
        httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        httpd.server_close()
    return 0
