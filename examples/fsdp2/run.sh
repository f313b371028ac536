#!/usr/bin/env bash
# Pre-train Qwen3-30B-A3B with the FSDP2 backend on one node.
set -euo pipefail
source "$(dirname "$0")/env.sh"

export TASK_QUEUE_ENABLE=2
export CPU_AFFINITY_CONF=1

NPUS_PER_NODE=8
torchrun --nnodes 1 --nproc_per_node 8 --master_port 6000 \
    train_fsdp2.py config.yaml \
    --training.logging_steps 1
