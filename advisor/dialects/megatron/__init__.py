"""MindSpeed-LLM's Megatron backend, whose launch script is the config: its arguments as bash
and argparse give them, their parallel arithmetic, the flags' data, the edits of the arguments,
and the structural checks."""
