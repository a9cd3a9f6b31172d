"""Command line: python -m specviz run | measure | bench | theory | train-tiny (also installed as `specviz`)."""

from specviz.cli.main import main

__all__ = ["main"]
