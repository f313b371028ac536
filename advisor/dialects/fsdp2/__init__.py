"""MindSpeed-LLM's FSDP2 backend: a YAML config (`train_fsdp2.py CONFIG.yaml`) and the launch
script that starts it, whose `--section.key value` flags override the YAML."""

# the launch-script dialects' ids, here so that the registry names them without importing the
# script reader (a YAML check never reads a script)
LAUNCH_ID = "launch-script"
SERVING_ID = "launch-inference"
