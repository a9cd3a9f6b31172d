import pytest


@pytest.fixture
def tiny_default(model_dirs, monkeypatch):
    """Point the app's default pair at the tiny test models (the bundled pair is tested elsewhere)."""
    target, draft = str(model_dirs["llama-target"]), str(model_dirs["llama-truncated"])
    monkeypatch.setenv("SPECVIZ_TARGET", target)
    monkeypatch.setenv("SPECVIZ_DRAFT", draft)
    return target, draft


@pytest.fixture(autouse=True)
def server_stepping(monkeypatch):
    """The round page's AppTests press its Streamlit buttons: they run the server-stepping path (AppTest runs no
    JavaScript, so the in-page player's keys cannot be pressed here; tests/app/test_rounds_player.py checks what the
    player is given, and tests/e2e the player itself)."""
    monkeypatch.setenv("SPECVIZ_STEPPING", "server")


@pytest.fixture(autouse=True)
def own_lecture_hall(monkeypatch):
    """Each test gets its own model pool: the pool keeps finished runs for the next session asking the same thing,
    and a run another test made (with its own stand-ins patched in) must not be handed to this one."""
    import specviz.ui.hall

    monkeypatch.setattr(specviz.ui.hall, "_HALLS", {})
