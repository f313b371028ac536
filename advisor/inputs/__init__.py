"""Inputs: configs, launch scripts, YAML text positions, schema validation, the ledger, the taxonomy."""
