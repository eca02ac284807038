"""The Ansible strategy of a playbook run: Ansible's own (``linear``, ``free``) or Mitogen's (``mitogen_linear``,
``mitogen_free``: each host's modules in one persistent interpreter, docs/MITOGEN.md). One place that turns the
name into the environment ansible-playbook reads, for the benchmarks and the test suite."""

from __future__ import annotations

from pathlib import Path

ANSIBLE = ("linear", "free", "host_pinned", "debug")


class StrategyError(ValueError):
    """A strategy that cannot be used here (Mitogen missing, unknown name)."""


def mitogen_strategy_dir() -> str:
    """Mitogen's strategy plugin folder, or "" when Mitogen is not installed."""
    try:
        import ansible_mitogen
    except ImportError:
        return ""
    return str(Path(ansible_mitogen.__file__).parent / "plugins" / "strategy")


def strategy_env(strategy: str) -> dict[str, str]:
    """``ANSIBLE_STRATEGY`` (and, for Mitogen's, ``ANSIBLE_STRATEGY_PLUGINS``) selecting ``strategy``."""
    if strategy in ANSIBLE:
        return {"ANSIBLE_STRATEGY": strategy}
    if not strategy.startswith("mitogen_"):
        raise StrategyError("strategy %r: use one of %s, mitogen_linear or mitogen_free"
                            % (strategy, ", ".join(ANSIBLE)))
    plugins = mitogen_strategy_dir()
    if not plugins:
        raise StrategyError("strategy %s needs Mitogen, which is not installed: `make venv` (the dev extra pins it) "
                            "or `pip install mitogen` (docs/MITOGEN.md)" % strategy)
    return {"ANSIBLE_STRATEGY": strategy, "ANSIBLE_STRATEGY_PLUGINS": plugins}
