"""Generic helpers every layer may use: reading the user's text files within limits, YAML with
positions, JSON-Schema validation, checked data files, where the data folders are, values."""
