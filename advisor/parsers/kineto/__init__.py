"""PyTorch profiler (Kineto) traces: *.pt.trace.json[.gz], one file per rank."""
