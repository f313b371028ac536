#!/usr/bin/env bash
# Simulated FSDP2 pre-training job: the torchrun in ./bin stands in for the real launcher and
# runs the simulator (train_fsdp2.py) on the CPU; the profile goes to training.profile_save_path.
set -euo pipefail
cd "$(dirname "$0")"
export PATH="$PWD/bin:$PATH"

export TRAINING_BACKEND=mindspeed_fsdp
export HCCL_CONNECT_TIMEOUT=1800
export TASK_QUEUE_ENABLE=0

torchrun --nnodes 1 --nproc_per_node 8 --master_port 6000 \
    train_fsdp2.py config.yaml \
    --training.logging_steps 1
