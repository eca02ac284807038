"""bluefleet capture: the command lines it builds take what the real tools take (issue 18 (6))."""

from __future__ import annotations

from bluefleet import capture


def test_cma_roce_mode_gets_an_rdma_device_not_a_netdev(tmp_path):
    """Before the fix capture ran ``cma_roce_mode -d <netdev>``; mlnx-tools' option takes an RDMA device."""
    ib = tmp_path / "infiniband"
    (ib / "mlx5_1").mkdir(parents=True)
    (ib / "mlx5_0").mkdir()
    rdma = capture.discover_rdma_devices(ib)
    assert rdma == ["mlx5_0", "mlx5_1"]
    cmds = capture.command_list(["0000:03:00.0"], ["p0"], rdma)
    roce = [c for c in cmds if c[0].startswith("cma_roce")]
    assert roce == [["cma_roce_mode", "-d", "mlx5_0", "-p", "1"], ["cma_roce_tos", "-d", "mlx5_0", "-p", "1"],
                    ["cma_roce_mode", "-d", "mlx5_1", "-p", "1"], ["cma_roce_tos", "-d", "mlx5_1", "-p", "1"]]
    assert not any(c[0].startswith("cma_roce") and "p0" in c for c in cmds)


def test_no_infiniband_class_means_no_rdma_devices(tmp_path):
    assert capture.discover_rdma_devices(tmp_path / "missing") == []


def test_mstflint_names_stand_in_for_mft_ones(monkeypatch):
    """On a machine with Debian's mstflint only, the MFT queries run under mstflint's names (issue 18 (4))."""
    monkeypatch.setattr(capture.shutil, "which", lambda name: "/usr/bin/" + name if name.startswith("mst") else None)
    assert capture.installed_argv(["flint", "-d", "0000:03:00.0", "q"]) == ["mstflint", "-d", "0000:03:00.0", "q"]
    assert capture.installed_argv(["mlxconfig", "-d", "x", "-e", "q"]) == ["mstconfig", "-d", "x", "-e", "q"]
    assert capture.installed_argv(["mlxfwmanager", "--query"]) is None
