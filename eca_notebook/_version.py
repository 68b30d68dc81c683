"""The package version, in a leaf module: every layer that reports it imports this, never the package root."""

__version__ = "0.1.0"
