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
