"""Hermes: a self-hosted AI agent that remembers."""

__version__ = "0.1.0"
