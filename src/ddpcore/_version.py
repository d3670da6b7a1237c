"""The ddpcore version (one place; the package root and every signature read it)."""

__version__ = "0.1.0"
