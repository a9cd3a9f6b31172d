"""The two architectures: standard `LlamaForCausalLM`, same tokenizer and vocabulary, same width.

target: deep and narrow (10 layers, width 256, tied embeddings), about 10.0 M parameters.
draft:  1 layer of the same width, about 2.9 M parameters, initialised from the target's embeddings, first layer and
        final norm, then trained (partly by distillation from the target).

On this CPU with HF eager attention at batch 1 a decode step costs about 1.05 ms + 0.75 ms per layer, so
c = draft step / target step = 1.8 / 8.6 = 0.21.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Arch:
    layers: int
    width: int = 256
    heads: int = 4
    mlp: int = 688  # about 8/3 x width, as in Llama
    context: int = 256

    def config(self, vocab_size: int, eos_id: int, pad_id: int):
        from transformers import LlamaConfig

        cfg = LlamaConfig(
            vocab_size=vocab_size,
            hidden_size=self.width,
            intermediate_size=self.mlp,
            num_hidden_layers=self.layers,
            num_attention_heads=self.heads,
            num_key_value_heads=self.heads,
            max_position_embeddings=self.context,
            rms_norm_eps=1e-5,
            rope_theta=10000.0,
            tie_word_embeddings=True,
            attention_bias=False,
            mlp_bias=False,
            hidden_act="silu",
            initializer_range=0.02,
            bos_token_id=eos_id,
            eos_token_id=eos_id,
            pad_token_id=pad_id,
            use_cache=True,
        )
        return cfg

    def as_dict(self) -> dict:
        return asdict(self)


def build(arch: Arch, vocab_size: int, eos_id: int, pad_id: int, seed: int):
    import torch
    from transformers import LlamaForCausalLM

    torch.manual_seed(seed)
    cfg = arch.config(vocab_size, eos_id, pad_id)
    cfg._attn_implementation = "sdpa"  # training only; exported config keeps the default
    model = LlamaForCausalLM(cfg)
    return model


def init_draft_from_target(draft, target) -> None:
    """Copy embeddings (tied LM head), the first decoder layer and the final norm from target into draft."""
    import torch

    with torch.no_grad():
        draft.model.embed_tokens.weight.copy_(target.model.embed_tokens.weight)
        draft.model.norm.weight.copy_(target.model.norm.weight)
        for i, layer in enumerate(draft.model.layers):
            layer.load_state_dict(target.model.layers[i].state_dict())
    draft.tie_weights()


def n_params(model) -> int:
    # tied weights are counted once
    return sum(p.numel() for p in {id(p): p for p in model.parameters()}.values())
