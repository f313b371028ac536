"""Edits: patches turned into file changes (YAML text, launch scripts) and the one writer."""
