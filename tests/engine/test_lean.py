"""The lean forward (engine/forward/lean.py) computes Hugging Face's function: logits and hidden states at prefill, one
step, a verify pass over K + 1 tokens and a tree pass; greedy runs identical across forwards; where it cannot run it
says why, and auto falls back."""

import pytest
import torch
from transformers import AutoModelForCausalLM

from specviz.core.settings import FORWARD_AUTO, FORWARD_HF, FORWARD_LEAN, RunSettings
from specviz.engine.decode import forwards_run, generate
from specviz.engine.forward.kv import CachedModel
from specviz.engine.forward.lean import LeanCache, _build, chosen_forward, lean_forward, lean_refusal
from specviz.engine.loading.models import BUNDLED_DRAFT, BUNDLED_TARGET, load_pair
from specviz.errors import SettingsError

TOL = 1e-4  # float32: the two forwards add the same products in another order
PROMPT = "def mean(values):\n    return sum(values) / len(values)\n"


@pytest.fixture(scope="module")
def bundled():
    return load_pair(BUNDLED_TARGET, BUNDLED_DRAFT, device="cpu", dtype="float32")


def both(model, vocab, ids, layers=()):
    """The same prompt in an HF and a lean CachedModel, prefilled."""
    made = [CachedModel(model, vocab, ids, hidden_layers=layers, forward=kind) for kind in (FORWARD_HF, FORWARD_LEAN)]
    for state in made:
        state.prefill()
    return made


def close(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.shape == b.shape and torch.allclose(a, b, atol=TOL, rtol=0)


@pytest.mark.parametrize("which", ["tiny-llama-gqa", "bundled"])
@torch.inference_mode()
def test_logits_and_features_equal_hf_at_step_verify_and_tree(load, bundled, which):
    pair = load("llama-target") if which == "tiny-llama-gqa" else bundled
    ids = pair.tokenizer.encode(PROMPT)
    hf, lean = both(pair.target, pair.vocab_size, ids, layers=(-1, 1, 2))
    drafts = torch.tensor(ids[1:5])
    assert close(hf.forward(drafts, logits_to_keep=5), lean.forward(drafts, logits_to_keep=5))  # verify over K + 1
    assert close(hf.hidden, lean.hidden)  # the features a head reads, at every row of the pass
    for state in (hf, lean):
        state.advance(ids[1:4], 2)  # two drafts kept, the other two cropped, a correction queued
    assert hf.length == lean.length
    assert close(hf.forward(), lean.forward())  # the step after a rollback
    token = torch.tensor([ids[4]])
    assert close(hf.step(token), lean.step(token))
    for state in (hf, lean):
        state.advance(ids[4:6], 1)  # the stepped token kept, one more queued: the tree pass reads it first
    nodes, depth = torch.tensor(ids[2:6]), torch.tensor([1, 1, 2, 2])
    sees = torch.tensor([[1, 0, 0, 0], [0, 1, 0, 0], [1, 0, 1, 0], [0, 1, 0, 1]], dtype=torch.bool)  # (n, n)
    assert close(hf.forward_tree(nodes, depth, sees), lean.forward_tree(nodes, depth, sees))


@torch.inference_mode()
def test_the_prefill_reads_every_row_and_the_cache_grows_past_its_first_buffer(bundled):
    model = bundled.target
    ids = torch.tensor(bundled.tokenizer.encode(PROMPT * 3))  # (L,) longer than the 16-token first buffer
    reference = model(input_ids=ids[None], output_hidden_states=True)
    weights = _build(model)
    cache = LeanCache(weights, capacity=16)
    hidden, states = lean_forward(weights, cache, ids, keep_layers=(0, 4, -1))
    assert cache.get_seq_length() == ids.numel() and cache.keys.shape[2] >= ids.numel()
    assert close(weights.head.times(hidden), reference.logits[0])
    for got, index in zip(states, (0, 4, -1)):
        assert close(got, reference.hidden_states[index][0])
    cache.crop(-3)
    assert cache.get_seq_length() == ids.numel() - 3


@torch.inference_mode()
def test_the_rotary_table_grows_and_holds_the_modules_own_values(bundled):
    weights = _build(bundled.target)
    first = weights.rotary_table.table[0].shape[0]
    positions = torch.tensor([3, first + 5])  # the second is past the first table: it doubles
    cos, sin = weights.rotary(positions, first + 6)
    assert weights.rotary_table.table[0].shape[0] == 2 * first
    module_cos, module_sin = bundled.target.model.rotary_emb(weights.embed[:1][None], position_ids=positions[None])
    assert torch.equal(cos, module_cos[0]) and torch.equal(sin, module_sin[0])


def test_a_rope_that_rescales_with_length_runs_the_module_each_pass(model_dirs):
    model = AutoModelForCausalLM.from_pretrained(
        model_dirs["llama-target"], rope_parameters={"rope_type": "dynamic", "factor": 2.0, "rope_theta": 10000.0}
    ).eval()
    assert _build(model).rotary_table is None  # its values at a position depend on the pass's length: no table


@torch.inference_mode()
def test_sharing_the_weights_leaves_the_models_own_forward_as_it_was(model_dirs):
    model = AutoModelForCausalLM.from_pretrained(model_dirs["llama-target"]).eval()
    ids = torch.tensor([[5, 9, 11, 3, 7]])
    before = model(input_ids=ids).logits
    weights = _build(model, share=True)  # what a GPU gets: the model's linears become views of the lean matrices
    assert model.model.layers[0].self_attn.k_proj.weight.data_ptr() != 0
    assert close(model(input_ids=ids).logits, before)
    hidden, _ = lean_forward(weights, LeanCache(weights), ids[0])
    assert close(weights.head.times(hidden), before[0])


@pytest.mark.slow
@pytest.mark.parametrize("method", ["plain", "draft", "tree", "eagle", "medusa"])
def test_greedy_runs_are_identical_across_forwards(bundled, method):
    tree = (2, 2, 1, 1) if method == "tree" else ()
    runs = {
        kind: generate(bundled, PROMPT, RunSettings(method=method, max_new_tokens=48, tree=tree, forward=kind))
        for kind in (FORWARD_HF, FORWARD_LEAN)
    }
    assert runs[FORWARD_HF].output_ids == runs[FORWARD_LEAN].output_ids
    assert runs[FORWARD_LEAN].meta["forward"]["target"] == FORWARD_LEAN
    assert runs[FORWARD_HF].meta["forward"]["target"] == FORWARD_HF


def test_auto_falls_back_where_lean_cannot_run_and_lean_says_why(load, bundled, monkeypatch):
    monkeypatch.delenv("SPECVIZ_FORWARD", raising=False)
    gpt2 = load("gpt2-target")
    assert "Llama, Qwen2 and Mistral" in lean_refusal(gpt2.target)
    assert chosen_forward(FORWARD_AUTO, gpt2.target) == FORWARD_HF
    with pytest.raises(SettingsError, match="lean forward cannot run here.*'gpt2'.*auto or hf"):
        chosen_forward(FORWARD_LEAN, gpt2.target)
    assert chosen_forward(FORWARD_AUTO, bundled.target) == FORWARD_LEAN
    assert forwards_run(bundled, RunSettings(method="early_exit"))["target"] == FORWARD_HF  # reads HF's cache
    assert forwards_run(bundled, RunSettings(method="draft")) == {"target": FORWARD_LEAN, "draft": FORWARD_LEAN}
    with pytest.raises(SettingsError, match="forward must be one of auto, lean, hf"):
        RunSettings(forward="fast")


def test_the_environment_can_make_auto_mean_hugging_faces_forward(bundled, monkeypatch):
    monkeypatch.setenv("SPECVIZ_FORWARD", "hf")  # how the whole suite runs on the reference forward
    assert chosen_forward(FORWARD_AUTO, bundled.target) == FORWARD_HF
    assert chosen_forward(FORWARD_LEAN, bundled.target) == FORWARD_LEAN  # an explicit choice is kept


def test_the_default_forward_stays_out_of_the_settings_json():
    assert "forward" not in RunSettings().to_dict()
    assert RunSettings.from_dict(RunSettings(forward=FORWARD_HF).to_dict()).forward == FORWARD_HF


def test_bench_measures_both_forwards_on_the_same_prompts(model_dirs, tmp_path, capsys):
    import json

    from specviz.cli.main import main

    prompts = tmp_path / "p.txt"
    prompts.write_text("def add(a, b):\nfor item in items:\n")
    out_json = tmp_path / "bench.json"
    target, draft = str(model_dirs["llama-target"]), str(model_dirs["llama-truncated"])
    argv = ["bench", "--target", target, "--draft", draft, "--prompts", str(prompts), "--k", "2"]
    code = main(
        [*argv, "--max-new-tokens", "8", "--lanes", "plain,draft", "--forward", "lean,hf", "--json", str(out_json)]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    doc = json.loads(out_json.read_text())
    assert doc["forward"] == {"target": "lean", "draft": "lean"}  # the document reads as the first forward's bench
    assert doc["by_forward"]["hf"]["forward"] == {"target": "hf", "draft": "hf"}
    assert doc["by_forward"]["hf"]["costs"]["forward"] == {"target": "hf", "draft": "hf"}
    rows = doc["forward_comparison"]
    assert [row["forward"] for row in rows] == ["lean", "hf"] and rows[-1]["plain_vs_last_forward"] == 1.0
    assert all(row["plain_tokens_per_s"] > 0 and row["c"] > 0 for row in rows)
    assert all(row["c_in_run"] > 0 and row["verify_in_run"] > 0 for row in rows)  # as the lane's own rounds paid
    assert "| lean |" in out and "| hf |" in out
    assert main([*argv, "--forward", "lean,fast"]) == 2
    assert "forward must be one of auto, lean, hf; got 'fast'" in capsys.readouterr().err


@pytest.mark.parametrize("kind", ["qwen2", "mistral"])
@torch.inference_mode()
def test_qwen2_biases_and_mistrals_window_run_lean_and_equal_hf(kind, monkeypatch):
    """Qwen2's q, k and v carry biases; Mistral has a sliding window, which a run shorter than it never reaches."""
    monkeypatch.delenv("SPECVIZ_FORWARD", raising=False)  # auto's own meaning, whatever the suite runs on
    from transformers import MistralConfig, MistralForCausalLM, Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(0)
    shape = dict(vocab_size=64, hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=4)
    shape |= dict(num_key_value_heads=2, max_position_embeddings=64)
    if kind == "qwen2":
        model = Qwen2ForCausalLM(Qwen2Config(**shape)).eval()
        assert model.model.layers[0].self_attn.q_proj.bias is not None
    else:
        model = MistralForCausalLM(MistralConfig(**shape, sliding_window=32)).eval()
    assert chosen_forward(FORWARD_AUTO, model) == FORWARD_LEAN
    ids = [3, 9, 27, 4, 11, 50, 7]
    hf, lean = both(model, 64, ids)
    drafts = torch.tensor([5, 6, 8])
    assert close(hf.forward(drafts, logits_to_keep=4), lean.forward(drafts, logits_to_keep=4))


def test_passes_over_several_rows_use_onednns_packed_copy_and_agree_with_the_plain_product(bundled):
    """A verify, tree or prefill pass multiplies several rows at once: on a CPU in float32 each matrix has oneDNN's
    packed copy for them (5 rows of the bundled LM head took 861 µs through MKL, 156 µs packed); one row (a step)
    keeps the input-major matrix-vector product. Both give x @ W to float32 rounding."""
    from specviz.engine.forward.lean import Matrix, onednn_packs, packed_copy

    assert onednn_packs()  # this torch build (CPU, oneDNN) packs: the lean forward's verify pass relies on it
    weights = _build(bundled.target)
    layers = weights.layers
    matrices = [weights.head] + [m for layer in layers for m in (layer.qkv, layer.out, layer.gate_up, layer.down)]
    assert all(m.packed is not None for m in matrices)
    w, bias = torch.randn(16, 24), torch.randn(24)
    matrix = Matrix(w, bias, packed_copy(w))
    for rows in (1, 2, 5, 9):
        x, residual = torch.randn(rows, 16), torch.randn(rows, 24)
        assert close(matrix.times(x), x @ w + bias) and close(matrix.times(x, residual), x @ w + bias + residual)
    if onednn_packs(torch.bfloat16):  # bfloat16: the packed copy serves every row count, a single row too
        w16, b16 = w.to(torch.bfloat16), bias.to(torch.bfloat16)
        half = Matrix(w16, b16, packed_copy(w16))
        assert half.packed is not None
        for rows in (1, 5):
            x = torch.randn(rows, 16).to(torch.bfloat16)
            want = (x.float() @ w16.float() + b16.float()).to(torch.bfloat16)
            got = half.times(x)
            assert got.dtype == torch.bfloat16 and torch.allclose(got.float(), want.float(), atol=0.05, rtol=0.02)
    assert packed_copy(w.to(torch.float16)) is None  # float16 has no packed copy: x @ W


def test_shared_weights_on_a_gpu_have_no_packed_copy(model_dirs):
    model = AutoModelForCausalLM.from_pretrained(model_dirs["llama-target"]).eval()
    weights = _build(model, share=True)  # what a GPU gets
    assert weights.layers[0].qkv.packed is None and weights.head.packed is None
