import pytest


@pytest.fixture
def tiny_default(model_dirs, monkeypatch):
    """Point the app's default pair at the tiny test models (the bundled pair is tested elsewhere)."""
    target, draft = str(model_dirs["llama-target"]), str(model_dirs["llama-truncated"])
    monkeypatch.setenv("SPECVIZ_TARGET", target)
    monkeypatch.setenv("SPECVIZ_DRAFT", draft)
    return target, draft
