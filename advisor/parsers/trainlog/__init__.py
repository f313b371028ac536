"""Training logs: the iterations a training framework prints."""
