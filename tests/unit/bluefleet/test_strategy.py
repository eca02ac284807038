"""bluefleet.strategy: the one place the benchmarks and the test suite turn a strategy name into environment."""

from __future__ import annotations

from pathlib import Path

import pytest

from bluefleet import strategy


def test_ansible_strategies_need_no_plugin_folder():
    assert strategy.strategy_env("linear") == {"ANSIBLE_STRATEGY": "linear"}
    assert strategy.strategy_env("free") == {"ANSIBLE_STRATEGY": "free"}


def test_mitogen_strategies_name_mitogens_folder():
    if not strategy.mitogen_strategy_dir():
        pytest.fail("mitogen is not installed (the dev extra pins it): run `make venv`")
    env = strategy.strategy_env("mitogen_linear")
    assert env["ANSIBLE_STRATEGY"] == "mitogen_linear"
    assert (Path(env["ANSIBLE_STRATEGY_PLUGINS"]) / "mitogen_linear.py").is_file()


def test_mitogen_missing_or_unknown_name_says_what_to_do(monkeypatch):
    with pytest.raises(strategy.StrategyError, match="use one of linear, free"):
        strategy.strategy_env("fast")
    monkeypatch.setattr(strategy, "mitogen_strategy_dir", lambda: "")
    with pytest.raises(strategy.StrategyError, match=r"needs Mitogen, which is not installed: `make venv`"):
        strategy.strategy_env("mitogen_free")
