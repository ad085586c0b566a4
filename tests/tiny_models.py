"""Tiny random models and family configurations shared by the tests (``from tiny_models import tiny_neox,
tiny_pico``)."""

import torch
from transformers import GPTNeoXConfig, GPTNeoXForCausalLM


def tiny_neox(
    seed: int, vocab: int, hidden: int = 32, layers: int = 2, heads: int = 2, mlp_ratio: int = 2, **config
) -> GPTNeoXForCausalLM:
    """A seeded random ``GPTNeoXForCausalLM`` in eval mode: ``vocab`` rows in its embedding
    matrices, width ``hidden``, ``layers`` blocks, an MLP of ``mlp_ratio * hidden``; other
    ``GPTNeoXConfig`` fields pass through (e.g. ``initializer_range=0.3`` for peaked outputs)."""
    torch.manual_seed(seed)
    cfg = GPTNeoXConfig(
        vocab_size=vocab,
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        intermediate_size=mlp_ratio * hidden,
        **{"max_position_embeddings": 64, **config},
    )
    return GPTNeoXForCausalLM(cfg).eval()


def tiny_pico(*members):
    """A ``PicoConfig`` that trains ``members`` (``apd.family.pretrain.Member``) in seconds: windows of 16
    tokens, batches of 8, one epoch at lr 1e-2, seed 3."""
    from apd.family.pretrain import PicoConfig

    return PicoConfig(members=members, seq_len=16, batch_size=8, epochs=1.0, lr=1e-2, warmup_frac=0.1, seed=3)
