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
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import Any

import pytest
import testinfra
from testinfra.utils.ansible_runner import AnsibleRunner

NOT_APPLICABLE = "bluefleet_not_applicable"


@dataclass
class Node:
    """One inventory host as the checks see it."""

    name: str
    groups: list[str]
    vars: dict[str, Any]
    host: Any = field(repr=False)  # testinfra Host

    @property
    def role(self) -> str:
        return "dpu" if "dpus" in self.groups else "host"

    @property
    def local(self) -> bool:
        return self.vars.get("ansible_connection") == "local"

    def run(self, command: str) -> Any:
        env = self.vars.get("bluefleet_environment") or {}
        if not isinstance(env, dict):
            raise pytest.UsageError(f"{self.name}: bluefleet_environment must be a mapping of variable -> value")
        prefix = ""
        if env:
            for key, value in env.items():
                if "{{" in str(value):
                    raise pytest.UsageError(f"{self.name}: bluefleet_environment[{key}] is a template ({value!r}); "
                                            "the conformance suite needs literal values")
            prefix = "env " + " ".join(shlex.quote(f"{k}={v}") for k, v in env.items()) + " "
        return self.host.run(prefix + command)


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


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{NOT_APPLICABLE}: internal: a check with no applicable host (deselected)")
    config.addinivalue_line("markers", "twin: the check reads the device twin's own state (dpusim); "
                                       "deselect with -m 'not twin' on real hardware")
    config.addinivalue_line("markers", "links: the check needs the node's own network namespace "
                                       "(lab containers, real machines; not local-connection twins)")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    names = {"gpu_host", "dpu", "node", "pair"} & set(metafunc.fixturenames)
    if not names:
        return
    (argname,) = names
    fleet = _fleet(metafunc.config)
    needs_netns = metafunc.definition.get_closest_marker("links") is not None
    if argname == "pair":
        values = []
        for dname in fleet.names("dpus"):
            hname = fleet.runner.get_variables(dname).get("bluefleet_host")
            if hname in fleet.selected:
                values.append((dname, hname))
        ids = [f"{h}+{d}" for d, h in values]
    else:
        group = {"gpu_host": "gpu_hosts", "dpu": "dpus", "node": None}[argname]
        values = fleet.names(group) if group else fleet.names("gpu_hosts") + fleet.names("dpus")
        if needs_netns:
            values = [v for v in values if fleet.runner.get_variables(v).get("ansible_connection") != "local"]
        ids = list(values)
    if not values:
        metafunc.parametrize(argname, [pytest.param(None, marks=pytest.mark.bluefleet_not_applicable)],
                             ids=["no-applicable-host"], indirect=True)
        return
    metafunc.parametrize(argname, values, ids=ids, indirect=True)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    keep, dropped = [], []
    for item in items:
        (dropped if item.get_closest_marker(NOT_APPLICABLE) else keep).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep
        config._bluefleet_not_applicable = [i.nodeid for i in dropped]  # type: ignore[attr-defined]


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
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
