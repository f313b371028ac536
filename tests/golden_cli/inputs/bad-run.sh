#!/usr/bin/env bash
export ASCEND_LAUNCH_BLOCKING=1
export TASK_QUEUE_ENABLE=1
export MULTI_STREAM_MEMORY_REUSE=2
export PYTORCH_NPU_ALLOC_CONF=expandable_segments:True,max_split_size_mb:512
export ASCEND_GLOBAL_LOG_LEVEL=0   # advisor: ignore[policy.log-level-verbose]
torchrun --nnodes 1 --nproc_per_node 4 \
    train_fsdp2.py bad-config.yaml \
    --training.per_device_train_bat 2 \
    --parallel.no_such_key 3 \
    --training.use_fused_rmsnorm
