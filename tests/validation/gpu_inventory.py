"""What the inventory says of a GPU host's GPUs: shared by the GPUDirect and the fabric benchmark checks."""

from __future__ import annotations

import pytest


def declared_gpus(node) -> int | None:
    """``bluefleet_gpus`` from the inventory: how many NVIDIA GPUs the host has (0: a GPU-less host of gpu_hosts,
    e.g. a storage or head node with the card); unset: a host of gpu_hosts has GPUs."""
    value = node.vars.get("bluefleet_gpus")
    if value is None or isinstance(value, bool | int):
        return None if value is None else int(value)
    text = str(value).strip()
    if not text.isdigit():
        raise pytest.UsageError(f"{node.name}: bluefleet_gpus is {value!r}, expected the number of GPUs (0: none)")
    return int(text)


def skip_if_declared_gpu_less(node) -> None:
    """A host of gpu_hosts declared GPU-less (``bluefleet_gpus: 0``): a GPU check does not apply to it."""
    if declared_gpus(node) == 0:
        pytest.skip(f"not applicable: {node.name} is declared GPU-less (bluefleet_gpus: 0)")
