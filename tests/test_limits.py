"""Public mode limits, read from the environment."""

from specviz.ui.limits import Limits, display_source, sidebar_source


def test_private_by_default_and_public_caps():
    assert Limits.from_env({}) == Limits()
    public = Limits.from_env({"SPECVIZ_PUBLIC": "1"})
    assert public.public
    assert public.max_new_tokens == 64
    assert public.max_k == 8
    assert public.max_prompts == 20
    assert Limits.from_env({"SPECVIZ_PUBLIC": "yes", "SPECVIZ_MAX_K": "99"}).max_k == 16


def test_local_paths_are_hidden_in_public_mode():
    public, private = Limits(public=True), Limits()
    assert display_source("/srv/models/pystdlib/target", public) == "target"
    assert display_source("/srv/models/pystdlib/target", private) == "/srv/models/pystdlib/target"
    assert display_source("HuggingFaceTB/SmolLM2-135M", public) == "HuggingFaceTB/SmolLM2-135M"
    from specviz.engine.loading.models import BUNDLED_TARGET

    for limits in (public, private):  # the bundled pair: where the repository was cloned is nobody's business
        assert sidebar_source(BUNDLED_TARGET, limits) == "assets/models/pystdlib/target"
    assert sidebar_source("/srv/models/pystdlib/target", public) == "target"


def test_public_mode_caps_a_dynamic_tree_by_depth_and_by_the_nodes_it_scores():
    import pytest

    from specviz.core.dyntree import DynamicTree
    from specviz.errors import SettingsError

    public = Limits.from_env({"SPECVIZ_PUBLIC": "1"})
    public.check_tree(DynamicTree(8, 3, 2))  # scores 2 + 2 * 4 = 10 nodes: fine
    with pytest.raises(SettingsError, match="scores"):
        public.check_tree(DynamicTree(8, 8, 16))  # 16 + 7 * 256 nodes scored a round
    with pytest.raises(SettingsError, match="deep"):
        public.check_tree(DynamicTree(8, public.max_k + 1, 1))


def test_public_mode_offers_the_pairs_that_need_no_download_unless_the_operator_names_others():
    from specviz.engine.loading.catalogue import CATALOGUE, PAIR_NAMES

    public = Limits.from_env({"SPECVIZ_PUBLIC": "1"})
    offline = ("pystdlib", "smollm2", "smollm2-pystdlib")
    assert public.offered_pairs == offline == tuple(s.key for s in CATALOGUE if s.offline)
    assert not public.offers_pair("qwen2.5-1.5b") and not public.problems
    assert Limits.from_env({}).offered_pairs == PAIR_NAMES  # private mode: every pair
    named = Limits.from_env({"SPECVIZ_PUBLIC": "1", "SPECVIZ_PAIRS": " pystdlib , GPT2-Medium "})
    assert named.offered_pairs == ("pystdlib", "gpt2-medium") and not named.problems


def test_a_bad_pairs_list_is_said_to_the_operator_and_fails_to_the_bundled_pair():
    bad = Limits.from_env({"SPECVIZ_PUBLIC": "1", "SPECVIZ_PAIRS": "llama-70b,smollm2"})
    assert bad.offered_pairs == ("pystdlib", "smollm2")
    [unknown, first] = bad.problems
    assert unknown.startswith("SPECVIZ_PAIRS names 'llama-70b', which is no pair here (the pairs are pystdlib, ")
    assert unknown.endswith("it is left out.")
    assert "leaves out 'pystdlib', the pair every session starts on" in first and "offered all the same" in first
    only_bad = Limits.from_env({"SPECVIZ_PUBLIC": "1", "SPECVIZ_PAIRS": "nonsense"})
    assert only_bad.offered_pairs == ("pystdlib",)


def test_public_mode_caps_a_visitors_runs_at_once_and_the_seconds_of_one_run():
    public = Limits.from_env({"SPECVIZ_PUBLIC": "1"})
    assert (public.runs_per_client, public.max_run_seconds) == (1, 120)
    assert Limits.from_env({}).max_run_seconds == 0  # private mode: no budget
    raised = Limits.from_env({"SPECVIZ_PUBLIC": "1", "SPECVIZ_RUNS_PER_CLIENT": "2", "SPECVIZ_MAX_RUN_SECONDS": "30"})
    assert (raised.runs_per_client, raised.max_run_seconds) == (2, 30)
    old = Limits.from_env({"SPECVIZ_PUBLIC": "1", "SPECVIZ_RUNS_PER_SESSION": "3"})
    assert old.runs_per_client == 3
    assert old.problems == (
        "SPECVIZ_RUNS_PER_SESSION is now SPECVIZ_RUNS_PER_CLIENT (a visitor's share, however many tabs it opens): "
        "read as SPECVIZ_RUNS_PER_CLIENT.",
    )
    bad = Limits.from_env({"SPECVIZ_PUBLIC": "1", "SPECVIZ_MAX_RUN_SECONDS": "soon"})
    assert bad.max_run_seconds == 120
    assert bad.problems == ("SPECVIZ_MAX_RUN_SECONDS='soon' is not a whole number of at least 1: using 120.",)
