"""Model identity: a name is itself; two directories are the same model when config and weight files agree."""

from specviz.measure.identity import local_pair_for, same_model


def model_dir(path, config=b'{"hidden_size": 8}', weights=b"0123"):
    path.mkdir()
    (path / "config.json").write_bytes(config)
    (path / "model.safetensors").write_bytes(weights)
    return str(path)


def test_a_copy_is_the_same_model_and_another_config_or_weights_is_not(tmp_path):
    original = model_dir(tmp_path / "a")
    assert same_model("org/model", "org/model")
    assert not same_model("org/model", "org/other")
    assert same_model(original, model_dir(tmp_path / "copy"))
    assert not same_model(original, model_dir(tmp_path / "other_config", config=b'{"hidden_size": 16}'))
    assert not same_model(original, model_dir(tmp_path / "other_weights", weights=b"012345"))
    (tmp_path / "empty").mkdir()
    assert not same_model(str(tmp_path / "empty"), str(tmp_path / "empty2"))
    assert same_model(original, original)


def test_the_local_pair_is_the_first_whose_target_is_served_and_that_has_a_draft(tmp_path):
    target = model_dir(tmp_path / "t")
    copy = model_dir(tmp_path / "t2")
    assert local_pair_for(copy, [(target, ""), (target, "d")]) == (target, "d")  # the first has no draft
    assert local_pair_for("org/else", [(target, "d")]) is None


def test_the_local_engine_of_a_head_server_is_its_target_with_the_head_beside_it(model_dirs, tmp_path):
    """A past bug: the two-engine comparison found a local pair only for a draft-model server; a feature head's server
    runs here as its target with the head of that kind beside it (no draft)."""
    import shutil

    from specviz.measure.identity import local_engine_for

    target, draft = str(model_dirs["llama-target"]), str(model_dirs["llama-truncated"])
    for method in ("eagle", "eagle3", "medusa"):  # the tiny models have one of each beside them
        assert local_engine_for(target, method, [(target, draft)]) == (target, None)
    assert local_engine_for(target, "draft", [(target, draft)]) == (target, draft)
    assert local_engine_for(target, "ngram", [(target, draft)]) is None  # vLLM skips its steps that find nothing
    alone = tmp_path / "alone" / "target"
    shutil.copytree(target, alone)  # the same model, with no head beside it
    assert local_engine_for(target, "eagle", [(str(alone), draft)]) is None
    assert local_engine_for(target, "eagle", [(str(alone), draft), (target, draft)]) == (target, None)
    assert local_engine_for("org/else", "eagle", [(target, draft)]) is None
