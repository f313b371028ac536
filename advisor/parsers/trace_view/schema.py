"""What torch_npu / MindSpore's trace_view.json calls the parts of the Ascend timeline.

The device's kernels are the rows of the process named "Ascend Hardware"; the overlap analysis
writes its own lanes as complete events; launches are linked to kernels by flow events, of two
categories: HostToDevice starts at the runtime launch (closest to the device), async_npu at the
framework operator that enqueued the task, on the Python thread (with the task queue on, the
launch runs later on a thread of its own). A database export names the same parts
(parsers/ascend_db/trace.py).
"""

from __future__ import annotations

from advisor.parsers.traces.steps import LaneNames

DEVICE_LANE = "Ascend Hardware"
# flow categories linking a host launch to its device kernel, best first
FLOW_PREFERENCE = ("HostToDevice", "async_npu")
# the category starting at the enqueueing operator: where a task is placed in a step phase
OPERATOR_FLOW = "async_npu"
OVERLAP_LANES = ("Computing", "Communication", "Communication(Not Overlapped)", "Free")
TRACE_VIEW = LaneNames(DEVICE_LANE, FLOW_PREFERENCE, OPERATOR_FLOW)
