"""The conformance suite's fixtures: which inventory hosts each check runs on.

Run it the testinfra way, against any inventory::

    pytest tests/validation --hosts=ansible://all --ansible-inventory=inventories/lab

Checks take one of these fixtures, parametrised from the inventory (never from a hard-coded list):

- ``gpu_host``: a host of group ``gpu_hosts``;
- ``dpu``: a host of group ``dpus``;
- ``node``: either;
- ``pair``: a DPU and the GPU host it names in ``bluefleet_host``.

A check applies to the hosts its fixture names; a host outside every applicable set is not a
skipped test, it is simply not a parameter. A check with no host at all to run on (for example
the link checks against an inventory that is only ``ansible_connection: local`` twins, which have
no network namespace of their own) is deselected and listed at the end of the run; an inventory
with no GPU host or no DPU in the selection fails (see ``test_inventory_has_pairs``).

Commands run in the host's environment: when a host defines ``bluefleet_environment`` (a mapping,
e.g. ``PATH`` and ``DPUSIM_ROOT`` for one twin per host on the local connection) they run under
``env K=V ...``; a lab container has the twin on its PATH from the image.

Twins and machines: a host is a device twin when the inventory says so (``bluefleet_twin``, else the variables
only the sim inventory and ``bluefleet lab up`` write; ``is_twin``). A check marked ``twin`` reads the twin itself
(``dpusim ...``) and is collected only for twin hosts, so the suite runs unchanged against real machines; one
marked ``links`` needs the node's own network namespace and is not collected for twins on the local connection.

Not applicable: a check that does not apply to one host (the service is not asked for there, the host is declared
GPU-less with ``bluefleet_gpus: 0`` ...) calls ``pytest.skip(NA_PREFIX + why)``: it is reported N/A with that
reason (evidence outcome ``not_applicable``, JUnit ``<skipped>`` + property, every report format), never passed.
A check must assert on every other path (tests/integration/test_conformance_breaks_sim.py reads them all).

Every check module names its stage (``pytestmark = pytest.mark.stage("fabric")``; one of ``STAGES``):
the report groups checks by stage and points a failing one at ``playbooks/<stage>.yml``.
With ``--bluefleet-evidence=PATH`` the suite writes, per check and host, the commands it ran and
what they printed (the evidence ``bluefleet report`` shows in each cell) to PATH as JSON.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import sys
import time
from dataclasses import dataclass, field
from typing import Any

import pytest
import testinfra
from testinfra.utils.ansible_runner import AnsibleRunner

NOT_APPLICABLE = "bluefleet_not_applicable"
# A check that does not apply to one host calls pytest.skip(NA_PREFIX + why): counted and reported as N/A (JUnit:
# a <skipped> with that message and the property bluefleet_outcome=not_applicable), never as passed.
NA_PREFIX = "not applicable: "
# The stages of site.yml a check can belong to (docs: DESIGN.md, "Stage order"); each has playbooks/<stage>.yml.
STAGES = ("preflight", "firmware", "offload", "services", "fabric", "zero_trust")
HOST_FIXTURES = ("gpu_host", "dpu", "node", "pair")
EVIDENCE_OUTPUT_CHARS = 4000  # per stream and command; the tail is kept (errors print last)
_SHELL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")  # a variable name /bin/sh takes in an assignment


class _Evidence:
    """Commands run by the check being executed, per host (filled by Node.run)."""

    current: list[dict[str, Any]] | None = None


def _truncate(text: str | None) -> str:
    text = text or ""
    if len(text) <= EVIDENCE_OUTPUT_CHARS:
        return text
    return "[... %d characters cut ...]\n" % (len(text) - EVIDENCE_OUTPUT_CHARS) + text[-EVIDENCE_OUTPUT_CHARS:]


def is_twin(hostvars: dict[str, Any]) -> bool:
    """Is this inventory host a device twin (sim inventory, lab container) rather than a machine with a card?

    ``bluefleet_twin`` (true/false) decides when set; otherwise the variables only twin inventories carry:
    ``bluefleet_twin_root`` (the sim inventory plugin) or ``bluefleet_lab_prefix`` (``bluefleet lab up``)."""
    explicit = hostvars.get("bluefleet_twin")
    if explicit is not None:
        return explicit is True or str(explicit).strip().lower() in ("1", "true", "yes", "on")
    return bool(hostvars.get("bluefleet_twin_root") or hostvars.get("bluefleet_lab_prefix"))


@dataclass
class Result:
    """What a command printed, decoded so that bytes that are not UTF-8 (a tool printing garbage) show as U+FFFD in
    the check's message instead of crashing the check with a UnicodeDecodeError."""

    command: str
    rc: int
    stdout: str
    stderr: str

    @classmethod
    def of(cls, command: str, result: Any) -> Result:
        def text(raw: Any) -> str:
            return raw.decode("utf-8", errors="replace") if isinstance(raw, bytes) else (raw or "")
        return cls(command, result.rc, text(result.stdout_bytes), text(result.stderr_bytes))


@dataclass
class Node:
    """One inventory host as the checks see it."""

    name: str
    groups: list[str]
    vars: dict[str, Any]
    host: Any = field(repr=False)  # testinfra Host
    # what read() ran on this host in this session, by command
    reads: dict[str, Result] = field(default_factory=dict, repr=False, compare=False)

    @property
    def role(self) -> str:
        return "dpu" if "dpus" in self.groups else "host"

    @property
    def local(self) -> bool:
        return self.vars.get("ansible_connection") == "local"

    @property
    def twin(self) -> bool:
        """The node's card is the device twin (decided from the inventory: see ``is_twin``)."""
        return is_twin(self.vars)

    @property
    def sim(self) -> bool:
        """A twin on the local connection: it shares this machine's kernel, network and systemd."""
        return self.twin and self.local

    def run(self, command: str) -> Result:
        env = self.vars.get("bluefleet_environment") or {}
        if not isinstance(env, dict):
            raise pytest.UsageError(f"{self.name}: bluefleet_environment must be a mapping of variable -> value")
        prefix = ""
        if env:
            for key, value in env.items():
                if "{{" in str(value):
                    raise pytest.UsageError(f"{self.name}: bluefleet_environment[{key}] is a template ({value!r}); "
                                            "the conformance suite needs literal values")
            if getattr(self.host.backend, "NAME", None) == "local" and all(map(_SHELL_NAME.fullmatch, env)):
                # testinfra's local backend runs the command with /bin/sh, which takes the assignments itself (the
                # same environment for the command, and its lookup on PATH): one process less per command than
                # `env K=V ...`, which stays for remote shells (a login shell need not take `K=V cmd`)
                prefix = " ".join(f"{k}={shlex.quote(str(v))}" for k, v in env.items()) + " "
            else:
                prefix = "env " + " ".join(shlex.quote(f"{k}={v}") for k, v in env.items()) + " "
        started = time.monotonic()
        result = Result.of(command, self.host.run(prefix + command))
        self._evidence(result, seconds=round(time.monotonic() - started, 3))
        return result

    def read(self, command: str) -> Result:
        """run() once per host, command and session, for a command that only looks (a tool's query, a file's
        content): the checks that need the same read share it, and each check's evidence still shows it (marked
        ``read_earlier``). A command that changes something, or whose answer a check waits for, goes to run()."""
        result = self.reads.get(command)
        if result is None:
            result = self.reads[command] = self.run(command)
        else:
            self._evidence(result, seconds=0.0, read_earlier=True)
        return result

    def _evidence(self, result: Result, **extra: Any) -> None:
        if _Evidence.current is not None:
            _Evidence.current.append({"host": self.name, "command": result.command, "rc": result.rc,
                                      "stdout": _truncate(result.stdout), "stderr": _truncate(result.stderr),
                                      **extra})


@dataclass
class Pair:
    host: Node
    dpu: Node

    def __str__(self) -> str:
        return f"{self.host.name}+{self.dpu.name}"


def _unwrap(value: Any) -> Any:
    """`ansible-inventory --list` (ansible-core 2.19) writes values an inventory plugin marked unsafe as
    ``{"__ansible_unsafe": "..."}``; the checks want the plain value."""
    if isinstance(value, dict):
        if len(value) == 1 and "__ansible_unsafe" in value:
            return value["__ansible_unsafe"]
        for key in list(value):
            value[key] = _unwrap(value[key])
    elif isinstance(value, list):
        value[:] = [_unwrap(v) for v in value]
    return value


class Fleet:
    """The selected inventory hosts, split by group."""

    def __init__(self, config: pytest.Config):
        inventory = config.option.ansible_inventory
        self.runner = AnsibleRunner.get_runner(inventory)
        _unwrap(self.runner.inventory)  # in place: testinfra's host lookup reads the same (cached) data
        spec = config.option.hosts or "ansible://all"
        patterns = []
        for part in spec.split(","):
            if not part.startswith("ansible://"):
                raise pytest.UsageError("the conformance suite selects hosts from an Ansible inventory: use "
                                        f"--hosts=ansible://PATTERN --ansible-inventory=PATH (got {part!r})")
            patterns.append(part[len("ansible://"):] or "all")
        selected: set[str] = set()
        for pattern in patterns:
            selected |= set(self.runner.get_hosts(pattern))
        self.selected = sorted(selected)
        self._nodes: dict[str, Node] = {}

    def names(self, group: str) -> list[str]:
        members = set(self.runner.get_hosts(group))
        return [h for h in self.selected if h in members]

    def node(self, name: str) -> Node:
        if name not in self._nodes:
            hostvars = self.runner.get_variables(name)
            host = self.runner.get_host(name)
            if host is None:  # a connection testinfra cannot speak natively: go through Ansible
                host = testinfra.get_host(f"ansible://{name}", ansible_inventory=self.runner.inventory_file,
                                          force_ansible=True)
            self._nodes[name] = Node(name, list(hostvars.get("group_names", [])), hostvars, host)
        return self._nodes[name]


def _fleet(config: pytest.Config) -> Fleet:
    if not hasattr(config, "_bluefleet_fleet"):
        config._bluefleet_fleet = Fleet(config)  # type: ignore[attr-defined]
    return config._bluefleet_fleet  # type: ignore[attr-defined]


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--bluefleet-evidence", metavar="PATH", default=None,
                     help="write each check's stage, hosts, outcome and the commands it ran (with their output) "
                          "to PATH as JSON, for `bluefleet report`")
    parser.addoption("--bluefleet-stages", metavar="STAGE[,STAGE...]", default=None,
                     help="run only the checks of these stages (%s); `bluefleet run --stage S` passes its stage"
                          % ", ".join(STAGES))


def _ansible_beside_python() -> None:
    """testinfra runs ``ansible-inventory`` (and ``ansible`` for connections it cannot speak) by name. Installed in
    a virtual environment that is not activated, they sit beside this Python: make them found, after whatever
    PATH already offers, so ``.venv/bin/pytest tests/validation ...`` works as the README shows it."""
    if shutil.which("ansible-inventory"):
        return
    beside = os.path.dirname(sys.executable)
    if os.access(os.path.join(beside, "ansible-inventory"), os.X_OK):
        os.environ["PATH"] = os.pathsep.join(p for p in (os.environ.get("PATH", ""), beside) if p)


def pytest_configure(config: pytest.Config) -> None:
    _ansible_beside_python()
    config.addinivalue_line("markers", "stage(name): the site.yml stage whose settings the check verifies, one of "
                                       + ", ".join(STAGES))
    config.addinivalue_line("markers", f"{NOT_APPLICABLE}: internal: a check with no applicable host (deselected)")
    config.addinivalue_line("markers", "twin: the check reads the device twin's own state (dpusim): collected only "
                                       "for twin hosts of the inventory (see is_twin); -m 'not twin' drops it")
    config.addinivalue_line("markers", "links: the check needs the node's own network namespace "
                                       "(lab containers, real machines; not twins on the local connection)")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    names = {"gpu_host", "dpu", "node", "pair"} & set(metafunc.fixturenames)
    if not names:
        return
    (argname,) = names
    fleet = _fleet(metafunc.config)
    needs_netns = metafunc.definition.get_closest_marker("links") is not None
    twin_only = metafunc.definition.get_closest_marker("twin") is not None

    def keep(name: str) -> bool:
        hostvars = fleet.runner.get_variables(name)
        if twin_only and not is_twin(hostvars):
            return False  # the check reads the twin itself: never collected for a machine with a card
        # a twin on the local connection shares this machine's network namespace: no links of its own
        return not (needs_netns and is_twin(hostvars) and hostvars.get("ansible_connection") == "local")

    if argname == "pair":
        values = []
        for dname in fleet.names("dpus"):
            hname = fleet.runner.get_variables(dname).get("bluefleet_host")
            if hname in fleet.selected and keep(dname) and keep(hname):
                values.append((dname, hname))
        ids = [f"{h}+{d}" for d, h in values]
    else:
        group = {"gpu_host": "gpu_hosts", "dpu": "dpus", "node": None}[argname]
        values = fleet.names(group) if group else fleet.names("gpu_hosts") + fleet.names("dpus")
        values = [v for v in values if keep(v)]
        ids = list(values)
    if not values:
        metafunc.parametrize(argname, [pytest.param(None, marks=pytest.mark.bluefleet_not_applicable)],
                             ids=["no-applicable-host"], indirect=True)
        return
    metafunc.parametrize(argname, values, ids=ids, indirect=True)


def _stage(item: pytest.Item) -> str | None:
    marker = item.get_closest_marker("stage")
    if marker is None:
        return None
    if len(marker.args) != 1 or marker.args[0] not in STAGES:
        raise pytest.UsageError(f"{item.nodeid}: pytest.mark.stage{marker.args!r}: give one stage, one of {STAGES}")
    return marker.args[0]


def _check_name(item: pytest.Item) -> str:
    """The check as a report column: the test name and its parameters other than the host."""
    callspec = getattr(item, "callspec", None)
    others = [] if callspec is None else [v for k, v in callspec.params.items() if k not in HOST_FIXTURES]
    name = getattr(item, "originalname", None) or item.name
    return name + ("[%s]" % "-".join(str(v) for v in others) if others else "")


def _item_hosts(item: pytest.Item) -> list[str]:
    callspec = getattr(item, "callspec", None)
    if callspec is None:
        return []
    hosts: list[str] = []
    for key in HOST_FIXTURES:
        value = callspec.params.get(key)
        if isinstance(value, tuple):  # pair: (dpu, host)
            hosts += [value[1], value[0]]
        elif value is not None:
            hosts.append(value)
    return hosts


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    wanted = config.getoption("bluefleet_stages", None)
    wanted = [w.strip() for w in wanted.split(",") if w.strip()] if wanted else None
    if wanted and set(wanted) - set(STAGES):
        raise pytest.UsageError(f"--bluefleet-stages {','.join(wanted)}: unknown stage; one of {', '.join(STAGES)}")
    other_stages = []
    for item in items:
        stage = _stage(item)
        if stage:
            item.user_properties.append(("stage", stage))  # lands in --junitxml as a property
        if wanted and stage not in wanted:
            other_stages.append(item)
    if other_stages:
        config.hook.pytest_deselected(items=other_stages)
        items[:] = [i for i in items if i not in other_stages]
    keep, dropped = [], []
    for item in items:
        (dropped if item.get_closest_marker(NOT_APPLICABLE) else keep).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep
        config._bluefleet_not_applicable = [i.nodeid for i in dropped]  # type: ignore[attr-defined]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    _Evidence.current = []
    started = time.monotonic()
    record = {"nodeid": item.nodeid, "check": _check_name(item), "module": item.module.__name__.rsplit(".", 1)[-1],
              "stage": _stage(item), "hosts": _item_hosts(item), "outcome": "passed", "message": ""}
    item.stash[_RECORD] = record
    try:
        yield
    finally:
        record["commands"] = _Evidence.current
        record["seconds"] = round(time.monotonic() - started, 3)
        _Evidence.current = None
        records = getattr(item.config, "_bluefleet_evidence", None)
        if records is not None:
            records.append(record)


_RECORD = pytest.StashKey[dict]()


def skip_reason(report: pytest.TestReport) -> str:
    """The reason a skipped report carries (``pytest.skip(reason)``: longrepr is (path, line, "Skipped: reason"))."""
    longrepr = report.longrepr
    text = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
    return text.removeprefix("Skipped: ")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    outcome = yield
    report = outcome.get_result()
    record = item.stash.get(_RECORD, None)
    if record is None or report.passed:
        return
    if report.failed:
        record["outcome"] = "failed" if report.when == "call" else "error"
        message = call.excinfo.exconly() if call.excinfo is not None else str(report.longrepr)
        record["message"] = (record["message"] + "\n" + message).strip()[-EVIDENCE_OUTPUT_CHARS:]
    elif report.skipped and record["outcome"] == "passed":
        reason = skip_reason(report)
        if reason.startswith(NA_PREFIX):  # the check does not apply to this host: N/A, never passed
            record["outcome"] = "not_applicable"
            report.user_properties.append(("bluefleet_outcome", "not_applicable"))
        else:
            record["outcome"] = "skipped"
        record["message"] = reason[-EVIDENCE_OUTPUT_CHARS:]


def pytest_sessionstart(session: pytest.Session) -> None:
    if session.config.getoption("bluefleet_evidence", None):
        session.config._bluefleet_evidence = []  # type: ignore[attr-defined]


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    path = session.config.getoption("bluefleet_evidence", None)
    if not path:
        return
    fleet = getattr(session.config, "_bluefleet_fleet", None)
    data = {"format": "bluefleet-evidence/1", "exitstatus": int(exitstatus),
            "stages": list(STAGES),
            "inventory": session.config.option.ansible_inventory,
            "hosts": {name: fleet.runner.get_variables(name).get("group_names", []) for name in fleet.selected}
            if fleet is not None else {},
            "not_applicable": getattr(session.config, "_bluefleet_not_applicable", []),
            "checks": getattr(session.config, "_bluefleet_evidence", [])}
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(data, handle, indent=1, default=str)


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    na = [r for r in terminalreporter.stats.get("skipped", []) if skip_reason(r).startswith(NA_PREFIX)]
    if na:
        terminalreporter.write_line(f"conformance: {len(na)} check(s) not applicable (N/A, not passed):")
        for rep in na:
            terminalreporter.write_line(f"  N/A {rep.nodeid}: {skip_reason(rep)[len(NA_PREFIX):]}")
    dropped = getattr(config, "_bluefleet_not_applicable", [])
    if dropped:
        terminalreporter.write_line(f"conformance: {len(dropped)} check(s) had no applicable host in this inventory "
                                    f"and were deselected: {', '.join(dropped)}")


@pytest.fixture
def gpu_host(request: pytest.FixtureRequest) -> Node:
    return _fleet(request.config).node(request.param)


@pytest.fixture
def dpu(request: pytest.FixtureRequest) -> Node:
    return _fleet(request.config).node(request.param)


@pytest.fixture
def node(request: pytest.FixtureRequest) -> Node:
    return _fleet(request.config).node(request.param)


@pytest.fixture
def pair(request: pytest.FixtureRequest) -> Pair:
    dname, hname = request.param
    fleet = _fleet(request.config)
    return Pair(host=fleet.node(hname), dpu=fleet.node(dname))


@pytest.fixture
def fleet(request: pytest.FixtureRequest) -> Fleet:
    return _fleet(request.config)
