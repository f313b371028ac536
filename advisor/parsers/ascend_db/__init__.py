"""torch_npu / MindSpore database export (export_type db): one SQLite file per rank."""
