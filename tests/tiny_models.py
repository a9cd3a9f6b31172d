"""Tiny tokenizers and causal LMs built and saved by the tests themselves, loaded through the same path users use."""

from __future__ import annotations

from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

EOS = "<|endoftext|>"
CORPUS = """
def add(a, b):
    return a + b

class Counter:
    def __init__(self):
        self.count = 0

    def increment(self, step=1):
        self.count += step
        return self.count

The quick brown fox jumps over the lazy dog. A speculative decoder drafts tokens and the target verifies them.
Return the sum of the values in the list, or zero when the list is empty.
for item in items:
    if item is None:
        continue
    print(item)
"""


def build_tokenizer(directory: Path, vocab_size: int = 300, corpus: str = CORPUS) -> PreTrainedTokenizerFast:
    """A byte-level BPE tokenizer trained on a few lines, saved so AutoTokenizer can load it."""
    raw = Tokenizer(models.BPE())
    raw.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    raw.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=[EOS], initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    raw.train_from_iterator([corpus] * 20, trainer=trainer)
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=raw, eos_token=EOS, bos_token=EOS)
    tokenizer.save_pretrained(directory)
    return tokenizer


def build_model(
    directory: Path,
    tokenizer: PreTrainedTokenizerFast,
    arch: str = "llama",
    layers: int = 2,
    seed: int = 0,
    padded_vocab: int = 16,
):
    """A randomly initialised causal LM with embeddings padded past the tokenizer (as real pairs have), saved."""
    torch.manual_seed(seed)
    vocab = len(tokenizer) + padded_vocab
    eos = tokenizer.eos_token_id
    if arch == "llama":
        config = LlamaConfig(
            vocab_size=vocab,
            hidden_size=64,
            intermediate_size=128,
            num_hidden_layers=layers,
            num_attention_heads=4,
            num_key_value_heads=2,
            max_position_embeddings=256,
            initializer_range=0.2,
            eos_token_id=eos,
            bos_token_id=eos,
            pad_token_id=eos,
        )
        model = LlamaForCausalLM(config)
    elif arch == "gpt2":
        config = GPT2Config(
            vocab_size=vocab,
            n_embd=64,
            n_layer=layers,
            n_head=4,
            n_positions=256,
            initializer_range=0.2,
            eos_token_id=eos,
            bos_token_id=eos,
            pad_token_id=eos,
        )
        model = GPT2LMHeadModel(config)
    else:
        raise ValueError(arch)
    model.generation_config.eos_token_id = eos
    model.generation_config.pad_token_id = eos
    model.save_pretrained(directory, safe_serialization=True)
    tokenizer.save_pretrained(directory)
    return model


def truncated_copy(source_dir: Path, directory: Path, layers: int = 1):
    """A draft made from the target's first layers: it shares embeddings and head, so it agrees some of the time."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(source_dir)
    config = model.config
    config.num_hidden_layers = layers
    draft = type(model)(config)
    draft.load_state_dict(model.state_dict(), strict=False)
    draft.save_pretrained(directory, safe_serialization=True)
    AutoTokenizer.from_pretrained(source_dir).save_pretrained(directory)
    return draft
