# Launch environment shared by the FSDP2 jobs of this project.
export TRAINING_BACKEND=mindspeed_fsdp
export HCCL_CONNECT_TIMEOUT=1800
export MULTI_STREAM_MEMORY_REUSE=2
export PYTORCH_NPU_ALLOC_CONF=expandable_segments:True
