# ruff: noqa: UP031  (printf-style formats, as in the rest of the twin)
"""The ``dpusim bmc`` sub-command (hooked into dpusim.cli with one call)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from dpusim.bmc import tree


def cmd_bmc(args: argparse.Namespace) -> int:
    if args.action == "serve":
        from dpusim.bmc import server
        if not args.root:
            raise ValueError("dpusim bmc serve: give --root DIR (a twin node root holding the BlueField-3)")
        password = args.password if args.password is not None else os.environ.get("DPUSIM_BMC_PASSWORD", "0penBmc1")
        return server.serve(args.root, args.listen, args.user, password, args.firmware, args.tls, args.cert_out)
    from dpusim.bmc import service
    if not args.output or not args.kind or not args.version:
        raise ValueError("dpusim bmc make-image: give --kind bmc-fw|erot-fw, --version V and -o FILE")
    out = service.make_image(args.kind, args.version, Path(args.output), corrupt=args.corrupt,
                             generation=args.generation)
    print(out)
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser("bmc", help="the BlueField-3 BMC (Redfish) of this node's card")
    s.add_argument("action", choices=("serve", "make-image"))
    s.add_argument("--listen", default="127.0.0.1:8443", help="serve: HOST:PORT (port 0 = any free port)")
    s.add_argument("--user", default="root")
    s.add_argument("--password", help="serve: default $DPUSIM_BMC_PASSWORD or the factory 0penBmc1")
    s.add_argument("--tls", action="store_true", help="serve: HTTPS with a self-signed certificate")
    s.add_argument("--cert-out", help="serve --tls: copy the certificate here")
    s.add_argument("--firmware", choices=tree.FIRMWARES, default="24.10", help="BMC generation modelled")
    s.add_argument("--kind", choices=("bmc-fw", "erot-fw"))
    s.add_argument("--version")
    s.add_argument("--generation", type=int, default=3, help="make-image: BlueField generation the image is for")
    s.add_argument("--corrupt", action="store_true")
    s.add_argument("-o", "--output")
    s.set_defaults(func=cmd_bmc)
