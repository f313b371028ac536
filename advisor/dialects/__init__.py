"""Config dialects as types: each way of configuring a training job (FSDP2 YAML, FSDP2 launch
script, Megatron-backend script, MindSpore Transformers YAML) is a document type behind one
protocol (`base.Document`, `base.JobConfig`), recognised and read through `registry`."""
