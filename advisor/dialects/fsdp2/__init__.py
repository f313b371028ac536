"""MindSpeed-LLM's FSDP2 backend: a YAML config (`train_fsdp2.py CONFIG.yaml`) and the launch
script that starts it, whose `--section.key value` flags override the YAML."""
