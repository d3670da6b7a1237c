"""Gold coreference: validate DDP against gold distances, agreement between runs."""
