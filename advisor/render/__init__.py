"""Renderers: pure functions from results to text, JSON, SARIF."""
