"""specviz: see speculative decoding happen, token by token, with real models."""

__version__ = "0.1.0"
