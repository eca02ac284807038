"""Focused cases for nvidia-smi, topo, perftest, nccl-tests and lsmod parsers."""

from __future__ import annotations

from pathlib import Path

import pytest
from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._lsmod import parse_lsmod
from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._nccl import parse_all_reduce
from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._nvidia_smi import parse_nvidia_smi, parse_topo
from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._parse_common import ParseError
from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._perftest import parse_ib_write_bw

from bluefleet.parse import strip_header

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "parsers"


def _fixture(kind, name):
    return strip_header((FIXTURES / kind / name).read_text(encoding="utf-8"))


def test_nvidia_smi_loop_output_reads_the_first_sample_only():
    one = _fixture("nvidia-smi", "h100-1gpu-550-no-processes.txt")
    twice = one + "\n" + one.replace("00000000:C3:00.0", "00000000:C4:00.0")
    gpus = parse_nvidia_smi(twice)["gpus"]
    assert [g["bus_id"] for g in gpus] == ["00000000:C3:00.0"]


def test_nvidia_smi_driver_failure_is_a_parse_error():
    text = ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
            "Make sure that the latest NVIDIA driver is installed and running.\n")
    with pytest.raises(ParseError) as err:
        parse_nvidia_smi(text)
    assert err.value.kind == "nvidia-smi" and err.value.line_no == 1


def test_topo_empty_cpu_affinity_survives_tab_expansion():
    text = _fixture("nvidia-smi-topo", "public-topo-m-8gpu-nv18-6nics-empty-cpu-affinity.txt")
    for variant in (text, text.expandtabs(8)):
        got = parse_topo(variant)
        assert "GPU0" not in got["cpu_affinity"]
        assert got["numa_affinity"]["GPU0"] == "0" and got["gpu_numa_id"]["GPU0"] == "N/A"
        assert got["cpu_affinity"]["GPU4"] == "1" and got["matrix"]["GPU4"]["NIC4"] == "PIX"


def test_topo_with_mlx5_columns_and_no_nic_legend():
    # header layout with mlx5_N columns and no GPU NUMA ID, as in a public Go unit-test fixture
    # (TestParseTopoMatrix_H100DGX8GPU_Mlx5Columns); two GPUs and two NICs kept here
    text = (
        "\tGPU0\tGPU1\tmlx5_0\tmlx5_1\tCPU Affinity\tNUMA Affinity\n"
        "GPU0\t X \tNV18\tPIX\tSYS\t0-47,96-143\t0\n"
        "GPU1\tNV18\t X \tSYS\tPIX\t48-95,144-191\t1\n"
        "mlx5_0\tPIX\tSYS\t X \tSYS\n"
        "mlx5_1\tSYS\tPIX\tSYS\t X \n"
        "\nLegend:\n\n  X    = Self\n"
    )
    got = parse_topo(text)
    assert got["devices"] == ["GPU0", "GPU1", "mlx5_0", "mlx5_1"]
    assert got["nics"] == {}
    assert got["matrix"]["mlx5_1"]["GPU1"] == "PIX"
    assert got["cpu_affinity"] == {"GPU0": "0-47,96-143", "GPU1": "48-95,144-191"}
    assert got["gpu_numa_id"] == {}


def test_topo_short_row_names_the_line():
    with pytest.raises(ParseError) as err:
        parse_topo("\tGPU0\tGPU1\tCPU Affinity\nGPU0\t X \tNV18\t0-7\nGPU1\tNV18\n")
    assert err.value.line_no == 3


def test_perftest_mb_per_s_is_converted_with_perftest_units():
    # 1 MB/sec in perftest is 2^20 bytes/s = 0.008388608 Gb/s; 11920.93 MB/sec ~ 100 Gb/s
    text = (" #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]\n"
            " 65536      5000             11920.93            11920.93                  0.190735\n")
    got = parse_ib_write_bw(text)
    assert got["bw_avg_gbps"] == pytest.approx(100.0, abs=0.001)
    assert got["unit"] == "MB/sec" and got["complete"] is True


def test_perftest_all_sizes_top_level_is_the_last_row():
    text = (" #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n"
            " 2          5000           0.05               0.05               3.1\n"
            " 8388608    5000           97.20              97.18              0.001448\n")
    got = parse_ib_write_bw(text)
    assert len(got["rows"]) == 2
    assert (got["msg_size"], got["bw_peak_gbps"], got["bw_avg_gbps"]) == (8388608, 97.2, 97.18)


def test_perftest_latency_report_is_not_a_bandwidth_report():
    text = (" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]\n"
            " 2       1000          1.54           2.13         1.58               1.58\n")
    with pytest.raises(ParseError) as err:
        parse_ib_write_bw(text)
    assert err.value.kind == "ib-write-bw" and err.value.line_no == 1


def test_nccl_row_with_missing_column_names_the_line():
    text = _fixture("nccl-all-reduce", "all_reduce_perf-2node-L40S-g1.txt")
    lines = text.split("\n")
    index = next(i for i, line in enumerate(lines) if line.strip().startswith("1024 "))
    lines[index] = lines[index].rsplit(None, 1)[0]
    with pytest.raises(ParseError) as err:
        parse_all_reduce("\n".join(lines))
    assert err.value.line_no == index + 1


def test_nccl_without_header_is_a_parse_error_and_failures_are_kept():
    with pytest.raises(ParseError):
        parse_all_reduce("           8             2     float     sum      -1    13.24    0.00    0.00      0\n")
    # nccl-tests failure message shape (recalled, no capture in the corpus): HOST: Test NCCL failure FILE:LINE 'TEXT'
    failure = "host: Test NCCL failure common.cu:1005 'unhandled system error'"
    got = parse_all_reduce("# nThread 1 nGpus 1 minBytes 8\n" + failure + "\n")
    assert got["rows"] == [] and got["errors"] == [failure]


def test_nccl_out_of_place_and_in_place_are_kept_apart():
    got = parse_all_reduce(_fixture("nccl-all-reduce", "all_reduce_perf-2node-H200-g8.txt"))
    row = next(r for r in got["rows"] if r["size"] == 65536)
    assert (row["algbw"], row["busbw"]) == (0.84, 1.58)
    assert (row["in_place"]["algbw"], row["in_place"]["busbw"]) == (1.27, 2.37)


def test_lsmod_header_only_and_negative_refcount():
    assert parse_lsmod("Module                  Size  Used by\n") == {"modules": {}}
    got = parse_lsmod("Module                  Size  Used by\nmlx5_core            3153920  -2\n")
    assert got["modules"]["mlx5_core"]["used_count"] is None


def test_lsmod_garbage_is_a_parse_error():
    with pytest.raises(ParseError) as err:
        parse_lsmod("libkmod: ERROR ../libkmod/libkmod-module.c:1968 kmod_module_get_holders: could not open\n")
    assert err.value.kind == "lsmod" and err.value.line_no == 1


@pytest.mark.parametrize("line", [
    " ibv_wr* API     : ON\n",
    " ibv_wr* API     : ON\t\tUsing DDP      : OFF\n",
    " ibv_wr* API     : ON\t\tUsing Enhanced Reorder      : OFF\n",
])
def test_ib_write_bw_reads_every_ibv_wr_line_layout(line):
    """Issue 18 (7): perftest before 25.01, 25.01-25.07 and 25.10+ (src/perftest_parameters.c) print this line three
    ways; the report reads the same."""
    from pathlib import Path

    from bluefleet.parse import strip_header
    folder = Path(__file__).resolve().parents[1] / "fixtures" / "parsers" / "ib-write-bw"
    text = strip_header((folder / "ib_write_bw-cuda-client-rdma_cm-16qp.txt").read_text(encoding="utf-8"))
    assert " ibv_wr* API     : ON\t\tUsing DDP      : OFF\n" in text
    base = parse_ib_write_bw(text)
    other = parse_ib_write_bw(text.replace(" ibv_wr* API     : ON\t\tUsing DDP      : OFF\n", line))
    assert other == base and base["bw_avg_gbps"]
