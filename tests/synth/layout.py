"""Shared constants and formatting of the synthetic profile writer."""

from __future__ import annotations

from tests.synth.timeline import NS

BASE_US = 1_700_000_000_000_000  # an epoch-like origin: absolute timestamps as torch_npu writes
PID_PYTHON, PID_CANN, PID_DEVICE, PID_HCCL, PID_OVERLAP = (
    437675,
    43767502,
    800,
    43767503,
    4376751100,
)
STREAM_COMPUTE, STREAM_COMM = 2, 8
HCCS_GBPS, SDMA_GBPS = 18.0, 25.0
GROUP = "10.0.0.1%enp_60000_0_1700000000000"
# Host operator args as torch_npu records them with record_shapes: real events are 250-400 bytes.
HOST_ARGS = (
    '{"Sequence number": -1, "Fwd thread id": 0, "Input Dims": [[4096, 4096], [4096, 4096], []], '
    '"Input type": ["c10::BFloat16", "c10::BFloat16", "Scalar"]}'
)


def ts(ns: int) -> str:
    return f"{BASE_US + ns // NS}.{ns % NS:03d}"


def us(ns: int) -> str:
    return f"{ns / NS:.3f}"


def subtract_intervals(
    intervals: list[tuple[int, int]], cover: list[tuple[int, int]]
) -> list[tuple[int, int]]:
    out = []
    merged = merge_intervals(cover)
    for a, b in intervals:
        cur = a
        for x, y in merged:
            if y <= cur or x >= b:
                continue
            if x > cur:
                out.append((cur, x))
            cur = max(cur, y)
        if cur < b:
            out.append((cur, b))
    return out


def merge_intervals(intervals: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for a, b in sorted(intervals):
        if merged and a <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], b))
        else:
            merged.append((a, b))
    return merged
