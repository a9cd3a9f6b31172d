"""The one family of errors a user can fix: the UI and the CLI turn these into messages, never tracebacks."""


class SpecvizError(Exception):
    """A problem with the user's input or environment; the message says what was wrong and what to do."""


class SettingsError(SpecvizError, ValueError):
    """A setting out of range (K, temperature, top-k, top-p, lengths, prompt)."""


class ModelLoadError(SpecvizError):
    """A model or tokenizer that cannot be loaded (missing, offline, unsafe weights, unsupported cache)."""


class IncompatiblePairError(SpecvizError):
    """Draft and target that do not share a tokenizer, so their token ids mean different things."""


class TraceFormatError(SpecvizError):
    """A trace document that is not a specviz trace of a version this code reads."""


class PlayerFormatError(SpecvizError):
    """A player bundle (viz.player_bundle) that is not one, or of a version this code does not read."""
