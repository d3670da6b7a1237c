"""Evaluation statistics (filled in by the statistics engine work)."""
