"""torch_npu / MindSpore trace_view.json: the Ascend device timeline as trace events."""
