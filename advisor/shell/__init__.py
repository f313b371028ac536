"""The bash subset launch scripts are written in: words and quoting, commands and blocks,
expansion with the position of every character, the environment a command sees, whether a
command starts a distributed launcher, and the launch script's exports and torchrun command."""
