"""Helpers for the bmc_* module tests: a twin BMC (dpusim bmc) on loopback and a module runner.

``twin_bmc(firmware="24.10", tls=False)`` starts ``dpusim.bmc.server`` in a thread on 127.0.0.1 with a
random port over a fresh BlueField-3 DPU root and returns ``TwinBmc`` (``.address``, ``.root``,
``.card()`` -> the card's data, ``.stop()``). ``run(module, args, check_mode=False)`` runs a module's
``main()`` and returns ``(failed, result)``.
"""

from __future__ import annotations

import json
import threading

from ansible.module_utils import basic
from ansible.module_utils.testing import patch_module_args

from dpusim import state
from dpusim.bmc import server, service

PASSWORD = "s3cret-Pass1"


class TwinBmc:
    def __init__(self, root, firmware="24.10", tls=False, cert_out=None):
        self.root = root
        state.init_node(root, ["bluefield3"], "dpu", [None])
        self.bmc = service.Bmc(root, password=PASSWORD, firmware=firmware)
        self.httpd = server.build_server(self.bmc, "127.0.0.1", 0, tls=tls, cert_out=cert_out)
        # a 0.05 s poll: stop() (socketserver's shutdown) waits for the serving loop's next poll (0.5 s by default)
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()
        self.address = "%s://127.0.0.1:%d" % ("https" if tls else "http", self.httpd.server_address[1])

    def args(self, **extra):
        return dict(extra, bmc={"address": self.address, "username": "root", "password": PASSWORD,
                                "validate_certs": False, "timeout": 10})

    def card(self):
        return state.load_node(self.root).cards[0].data

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()


class _Exit(Exception):
    def __init__(self, failed, result):
        super().__init__(result.get("msg"))
        self.failed = failed
        self.result = result


def make_runner(monkeypatch):
    def _exit_json(self, **kwargs):
        raise _Exit(False, json.loads(json.dumps(kwargs)))

    def _fail_json(self, msg, **kwargs):
        kwargs["msg"] = msg
        raise _Exit(True, json.loads(json.dumps(kwargs)))

    monkeypatch.setattr(basic.AnsibleModule, "exit_json", _exit_json)
    monkeypatch.setattr(basic.AnsibleModule, "fail_json", _fail_json)

    def run(module, args, check_mode=False):
        args = dict(args)
        if check_mode:
            args["_ansible_check_mode"] = True
        with patch_module_args(args):
            try:
                module.main()
            except _Exit as exc:
                return exc.failed, exc.result
        raise AssertionError("the module returned without exit_json or fail_json")

    return run
