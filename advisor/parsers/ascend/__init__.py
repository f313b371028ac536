"""torch_npu / MindSpore text export: an ASCEND_PROFILER_OUTPUT folder per rank."""
