"""MindSpeed-LLM's Megatron backend, whose launch script is the config: its arguments as bash
and argparse give them, their parallel arithmetic, the flags' data, the edits of the arguments,
and the structural checks."""

# the dialects' ids, here so that the registry names them without importing the script reader
# (a YAML check never reads a script)
SCRIPT_ID = "megatron-script"
SERVING_ID = "megatron-inference"
