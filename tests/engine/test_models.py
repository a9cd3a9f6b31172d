"""Loading by path and hub id with clear refusals: incompatible tokenizers, offline hub ids, unsafe weights."""

import time

import pytest
import torch

from specviz.core.settings import RunSettings
from specviz.engine.decode import generate
from specviz.engine.loading import models
from specviz.engine.loading.models import choose_device, choose_dtype, load_pair
from specviz.errors import IncompatiblePairError, ModelLoadError, SettingsError


def test_padded_embeddings_are_sliced_to_the_shared_vocabulary(load):
    pair = load("llama-target", "llama-random")  # embeddings padded by 16 and by 3 past a 300-token tokenizer
    assert pair.vocab_size == len(pair.tokenizer) == 300
    trace = generate(pair, "def", RunSettings(k=2, max_new_tokens=20))
    assert all(t < 300 for t in trace.output_ids)


def test_tokenizers_with_different_vocabularies_are_refused(model_dirs):
    with pytest.raises(IncompatiblePairError, match="use different tokenizers"):
        load_pair(str(model_dirs["llama-target"]), str(model_dirs["other-vocab"]), device="cpu")


def test_same_tokenizer_different_architectures_are_accepted(load):
    pair = load("llama-target", "gpt2-target")
    assert generate(pair, "for item in", RunSettings(k=2, max_new_tokens=10)).totals.committed == 10


@pytest.fixture
def empty_hub_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))


def test_hub_id_offline_says_so_and_how_to_fix_it(empty_hub_cache, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    start = time.perf_counter()
    with pytest.raises(ModelLoadError, match="not in the local Hugging Face cache .* cannot be reached") as err:
        load_pair("HuggingFaceTB/SmolLM2-360M", None, device="cpu")
    assert "hf download HuggingFaceTB/SmolLM2-360M" in str(err.value)
    assert time.perf_counter() - start < 20


def test_unreachable_hub_is_detected_quickly_without_offline_mode(empty_hub_cache, monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(models, "_hub_reachable", lambda timeout_s=3.0: False)
    with pytest.raises(ModelLoadError, match="cannot be reached"):
        load_pair("gpt2", None, device="cpu")


@pytest.mark.parametrize(
    "source, message",
    [
        ("", "No tokenizer given"),
        ("/definitely/not/here", "is not a directory"),
        ("not a valid id!", "neither an existing directory nor a valid hub id"),
    ],
)
def test_bad_sources_get_specific_messages(source, message):
    with pytest.raises(ModelLoadError, match=message):
        load_pair(source, None, device="cpu")


def test_a_directory_that_is_not_a_model(model_dirs):
    with pytest.raises(ModelLoadError, match="is not a model directory: it has no config.json"):
        load_pair(str(model_dirs["llama-target"].parent / "tokenizer"), None, device="cpu")


def test_pickle_weights_are_refused_unless_allowed(model_dirs, tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    source = model_dirs["gpt2-random"]
    model = AutoModelForCausalLM.from_pretrained(source)
    model.config.save_pretrained(tmp_path)
    torch.save(model.state_dict(), tmp_path / "pytorch_model.bin")  # the legacy pickle format only
    AutoTokenizer.from_pretrained(source).save_pretrained(tmp_path)
    with pytest.raises(ModelLoadError, match="no safetensors weights"):
        load_pair(str(tmp_path), None, device="cpu")
    assert load_pair(str(tmp_path), None, device="cpu", allow_pickle=True).draft is None


def test_run_level_refusals(load):
    pair = load("llama-target")
    with pytest.raises(SettingsError, match="The prompt is empty"):
        generate(pair, "   \n", RunSettings(method="plain"))
    with pytest.raises(SettingsError, match="needs a draft model"):
        generate(pair, "hello", RunSettings(method="draft"))
    with pytest.raises(SettingsError, match="more than the model's context of 256 tokens"):
        generate(pair, "hello " * 300, RunSettings(method="plain"))


def test_device_choice():
    assert choose_device("cpu") == torch.device("cpu")
    assert choose_device("auto").type in ("cpu", "cuda", "mps")
    if not torch.cuda.is_available():
        with pytest.raises(SettingsError, match="'cuda' is not available"):
            choose_device("cuda")
    with pytest.raises(SettingsError, match="device must be one of"):
        choose_device("tpu")


def test_sliding_window_models_are_refused_past_the_window(model_dirs, tmp_path):
    from transformers import AutoTokenizer, MistralConfig, MistralForCausalLM

    tokenizer = AutoTokenizer.from_pretrained(model_dirs["llama-target"])
    config = MistralConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        sliding_window=16,
        max_position_embeddings=256,
    )
    MistralForCausalLM(config).save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    pair = load_pair(str(tmp_path), None, device="cpu")
    assert pair.sliding_window == 16
    # untrained weights may pick the EOS token at any step: the run's length is the point here, not where it stops
    plain = RunSettings(method="plain", max_new_tokens=8, stop_at_eos=False)
    assert generate(pair, "def", plain).totals.committed == 8
    with pytest.raises(SettingsError, match="sliding-window cache of 16 tokens"):
        generate(pair, "def", RunSettings(method="ngram", max_new_tokens=40, stop_at_eos=False))


def test_running_out_of_memory_while_loading_is_a_message(model_dirs, monkeypatch):
    from transformers import AutoModelForCausalLM

    def boom(*args, **kwargs):
        raise MemoryError()

    monkeypatch.setattr(AutoModelForCausalLM, "from_pretrained", boom)
    with pytest.raises(ModelLoadError, match="Ran out of memory loading"):
        load_pair(str(model_dirs["llama-target"]), None, device="cpu")


def test_precision_is_chosen_per_device_and_bad_choices_are_refused():
    cpu = torch.device("cpu")
    assert choose_dtype("auto", cpu) == torch.float32
    assert choose_dtype(None, cpu) == torch.float32
    assert choose_dtype("bfloat16", cpu) == torch.bfloat16
    assert choose_dtype(torch.float64, cpu) == torch.float64
    with pytest.raises(SettingsError, match="float16 is slow on CPU"):
        choose_dtype("float16", cpu)
    with pytest.raises(SettingsError, match="dtype must be one of"):
        choose_dtype("fp8", cpu)
