"""The registry is the one source of method names: each engine method has exactly one class, each lane mirrors a
method that exists, and no other file names a method by a string literal."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from specviz import methods
from specviz.engine.proposers import PROPOSER_CLASSES, proposer_class
from specviz.errors import SettingsError

ROOT = Path(__file__).resolve().parents[2]
SOURCES = sorted([*ROOT.glob("specviz/**/*.py"), *ROOT.glob("pages/*.py"), ROOT / "app.py"])
METHOD_WORDS = ("method", "lane")  # names that hold a method name, where a literal would be a method name


def test_every_speculative_engine_method_has_exactly_one_class_and_every_class_a_method():
    for name, method in methods.REGISTRY.items():
        implementing = [cls for cls in PROPOSER_CLASSES if cls.method == name]
        expected = 1 if method.engine == methods.SPECVIZ and method.speculative else 0
        assert len(implementing) == expected, name
    assert proposer_class(methods.PLAIN) is None
    assert {cls.method for cls in PROPOSER_CLASSES} <= set(methods.ENGINE_METHODS)


def test_lanes_mirror_registered_methods_and_costs_are_separate_from_loading():
    for method in methods.REGISTRY.values():
        assert method.mirrors is None or methods.get(method.mirrors).engine == methods.SPECVIZ
        assert method.draft_cost in (
            methods.NO_DRAFTS,
            methods.DRAFT_MODEL_STEP,
            methods.HOST_LOOKUP,
            methods.FEATURE_HEAD_STEP,
            methods.MEDUSA_HEADS_PASS,
            methods.EXIT_LAYERS_STEP,
            methods.QUANTIZED_STEP,
        )
        assert not (method.loads_draft and method.loads_head)  # a head drafts instead of a second model
        if method.loads_draft:
            assert method.draft_cost == methods.DRAFT_MODEL_STEP  # today every second model drafts step by step
    assert not methods.get(methods.NGRAM).loads_draft
    assert methods.get(methods.NGRAM).speculative  # it drafts, and drafting there costs a host lookup
    assert methods.get(methods.EAGLE).draft_cost == methods.FEATURE_HEAD_STEP
    assert methods.get(methods.EAGLE3).draft_cost == methods.FEATURE_HEAD_STEP
    assert methods.get(methods.MEDUSA).draft_cost == methods.MEDUSA_HEADS_PASS
    assert methods.get(methods.EARLY_EXIT).draft_cost == methods.EXIT_LAYERS_STEP  # no second model, no head
    assert not methods.get(methods.EARLY_EXIT).loads_draft and not methods.get(methods.EARLY_EXIT).loads_head
    quantized = methods.get(methods.QUANTIZED)  # the target's own weights, re-packed: no second model, no head
    assert quantized.draft_cost == methods.QUANTIZED_STEP and quantized.quantizes
    assert not quantized.loads_draft and not quantized.loads_head
    assert methods.FROM_VLLM == {
        "draft_model": methods.DRAFT,
        "ngram": methods.NGRAM,
        "eagle": methods.EAGLE,
        "eagle3": methods.EAGLE3,
        "medusa": methods.MEDUSA,
        "suffix": methods.SUFFIX,
        "mtp": methods.MTP,
    }


@pytest.mark.parametrize(
    "method, tree, message",
    [
        (methods.TREE, (), "needs a tree shape"),
        (methods.NGRAM, (2, 1), "n-gram lookup proposes one continuation"),
        (methods.DRAFT, (2, 1), "only used by the tree method"),
        (methods.SUFFIX, (2, 1), "Suffix decoding here proposes one path"),
        (methods.EARLY_EXIT, (2, 1), "Early exit drafts a chain"),
    ],
)
def test_each_method_refuses_the_options_it_cannot_run(method, tree, message):
    from specviz.core.settings import RunSettings

    with pytest.raises(SettingsError, match=message):
        RunSettings(method=method, tree=tree)
    RunSettings(method=methods.PLAIN, tree=tree or (1,))  # plain ignores a shape: the baseline of a tree run


@pytest.mark.parametrize("method", methods.BRANCHING)
def test_the_feature_heads_draft_a_chain_or_with_a_shape_a_tree(method):
    from specviz.core.settings import RunSettings

    assert method in methods.PROPOSERS  # a chain method (on every page), that also takes a shape
    assert not RunSettings(method=method).is_tree
    tree = RunSettings(method=method, tree=(2, 1))
    assert tree.is_tree and tree.draft_length == 2 and tree.draft_slots == 4


def method_literals(tree: ast.AST) -> set[str]:
    """The registry names this module's code uses as string literals where a method is meant: compared with, passed
    as or assigned to something whose name says method or lane, or looked up in the registry."""
    names, found = set(methods.REGISTRY), set()

    def holds_method(node: ast.AST) -> bool:
        text = ast.unparse(node).lower()
        return any(word in text for word in METHOD_WORDS)

    def literals(node: ast.AST) -> set[str]:
        return {n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and n.value in names}

    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            if any(holds_method(o) for o in operands if not isinstance(o, ast.Constant)):
                found |= set().union(*(literals(o) for o in operands if not holds_method(o)))
        elif isinstance(node, ast.keyword) and node.arg and any(w in node.arg for w in METHOD_WORDS):
            found |= literals(node.value)
        elif isinstance(node, ast.Assign) and any(holds_method(t) for t in node.targets):
            found |= literals(node.value)
        elif isinstance(node, ast.Call) and ast.unparse(node.func) in ("methods.get", "methods.label", "get"):
            found |= literals(node)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            arguments = node.args.args + node.args.kwonlyargs
            defaults = [*node.args.defaults, *node.args.kw_defaults]
            for arg, default in zip(arguments[len(arguments) - len(defaults) :], defaults):
                if default is not None and any(w in arg.arg for w in METHOD_WORDS):
                    found |= literals(default)
        elif isinstance(node, (ast.For, ast.comprehension)) and holds_method(node.target):
            found |= literals(node.iter)
        elif isinstance(node, ast.AnnAssign) and node.value is not None and holds_method(node.target):
            found |= literals(node.value)
    return found


def test_no_file_but_the_registry_names_a_method_by_a_literal():
    offenders = {}
    for path in SOURCES:
        if path.name == "methods.py" and path.parent.name == "specviz":
            continue
        used = method_literals(ast.parse(path.read_text(encoding="utf-8")))
        if used:
            offenders[str(path.relative_to(ROOT))] = sorted(used)
    assert offenders == {}, "use the constants in specviz.methods instead of these literals"


def test_the_literal_finder_finds_each_kind_of_use():
    sample = """
if settings.method == "ngram": pass
run(pair, method="draft")
lane = "hf_assisted"
methods.get("tree")
def f(method="plain"): pass
for method in ("plain", "ngram"): pass
role = "draft"  # a model's role, not a method
"""
    assert method_literals(ast.parse(sample)) == {"ngram", "draft", "hf_assisted", "tree", "plain"}


def test_a_pair_runs_what_its_draft_allows():
    """No draft: nothing that loads one; a draft of another tokenizer: TLI and SLEM instead of the token-id methods."""
    alone = methods.runnable_with(methods.PROPOSERS, has_draft=False, crosses=False)
    assert methods.DRAFT not in alone and methods.NGRAM in alone and methods.first_choice(alone) == alone[0]
    same = methods.runnable_with(methods.PROPOSERS, has_draft=True, crosses=False)
    assert same == methods.PROPOSERS and methods.first_choice(same) == methods.DRAFT
    crossing = methods.runnable_with(methods.PROPOSERS, has_draft=True, crosses=True)
    assert set(methods.CROSSING) <= set(crossing) and methods.DRAFT not in crossing
    assert methods.first_choice(crossing) == methods.TLI
