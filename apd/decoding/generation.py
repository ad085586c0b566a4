"""``generate`` with the warpers CD and APD need switched off, and DoLa's arguments.

Hugging Face appends its own warpers (``top_k=50`` by default) after custom processors;
:func:`generate` passes ``top_k=0, top_p=1.0, temperature=1.0`` so the contrastive scores are
sampled as they are.
"""

from __future__ import annotations

from typing import Optional, Sequence, Union

import torch
from transformers import LogitsProcessor, LogitsProcessorList

from apd.decoding.processors import check_ids

# HF's sampling warpers, run AFTER custom processors, at values that make them do nothing
_WARPERS = {
    "temperature": 1.0,
    "top_k": 0,
    "top_p": 1.0,
    "typical_p": 1.0,
    "min_p": None,
    "epsilon_cutoff": 0.0,
    "eta_cutoff": 0.0,
}


def generate(
    expert,
    input_ids: torch.Tensor,
    attention_mask: Optional[torch.Tensor] = None,
    processors: Union[LogitsProcessor, Sequence[LogitsProcessor], None] = (),
    **generate_kwargs,
):
    """``expert.generate`` with our processors prepared and HF's own warpers neutralised.

    Prepares every processor that has ``prepare`` with ``attention_mask``. A batch must be padded on
    the left (the family's tokenizer does it) and its ids must lie within the expert's vocabulary; both
    are checked, with an error naming the fix. With sampling
    (``do_sample=True``), sets HF's warpers to do nothing (``temperature=1.0, top_k=0,
    top_p=1.0, typical_p=1.0, min_p=None, epsilon_cutoff=eta_cutoff=0``) unless given, whatever
    the model's ``generation_config`` says; giving a non-neutral one together with processors is
    an error (HF would apply it on top of the CD scores; pass filters to the processor instead).
    ``repetition_penalty`` defaults to 1.0; a value you give acts on the ELM's logits before the
    processors (DoLa's 1.2 does). Without processors, ``temperature=t`` is the
    temperature-sampling baseline (HF's ``TemperatureLogitsWarper``). Returns what
    ``expert.generate`` returns. An empty batch (or prompt) is a ValueError: ``input_ids`` must be
    ``(batch >= 1, length >= 1)``.

    Example:
        >>> import apd
        >>> fam, built = apd.get_family("pico", "smoke", device="cpu", progress=False)  # trained once, then cached
        >>> enc = fam.tokenizer(["Ada was born in"], return_tensors="pt")
        >>> cd = apd.ContrastiveLogitsProcessor(fam.model(fam.alm), T=2.0, vocab_size=fam.vocab_size)
        >>> torch.manual_seed(0)  # doctest: +ELLIPSIS
        <torch._C.Generator object at ...>
        >>> out = generate(fam.model(fam.elm), enc.input_ids, enc.attention_mask, cd, max_new_tokens=4,
        ...                do_sample=True, pad_token_id=fam.tokenizer.pad_token_id)
        >>> out.shape[0]
        1
    """
    if processors is None:
        processors = []
    elif isinstance(processors, LogitsProcessor):
        processors = [processors]
    processors = list(processors)
    beams = generate_kwargs.get("num_beams") or getattr(getattr(expert, "generation_config", None), "num_beams", 1)
    stateful = [type(p).__name__ for p in processors if hasattr(p, "prepare")]
    if stateful and (beams or 1) > 1:
        raise ValueError(
            f"{', '.join(stateful)} does not support beam search (num_beams={beams}): the amateur keeps one "
            "cache per sequence and beam search reorders sequences. Use greedy decoding or sampling "
            "(num_beams=1, with do_sample=True or False)."
        )
    _check_batch(input_ids)
    check_ids(expert, input_ids, "expert")
    if attention_mask is not None:
        if tuple(attention_mask.shape) != tuple(input_ids.shape):
            raise ValueError(
                f"attention_mask {tuple(attention_mask.shape)} and input_ids {tuple(input_ids.shape)} "
                "differ in shape; pass the mask the tokenizer returned with these ids."
            )
        if bool((attention_mask[:, 1:] < attention_mask[:, :-1]).any()):
            raise ValueError(
                "the prompts are padded on the right (attention_mask has 0s after a row's tokens), so generation "
                "would continue the short prompts after their padding; pad on the left: "
                "tokenizer.padding_side = 'left' (the family's tokenizer pads on the left already)."
            )
    for p in processors:
        if hasattr(p, "prepare"):
            p.prepare(attention_mask)
    if generate_kwargs.get("do_sample", False):
        for name, neutral in _WARPERS.items():
            given = generate_kwargs.get(name)
            if given is None or given == neutral:
                generate_kwargs[name] = neutral
            elif processors and given != neutral:
                raise ValueError(
                    f"{name}={given} would be applied by Hugging Face after the CD/APD processor, on its "
                    f"scores; leave {name} at {neutral} and pass filters (TopP, TopK, AlphaMask) to the processor."
                )
    generate_kwargs.setdefault("repetition_penalty", 1.0)
    if attention_mask is not None:
        generate_kwargs["attention_mask"] = attention_mask
    return expert.generate(input_ids=input_ids, logits_processor=LogitsProcessorList(processors), **generate_kwargs)


def _check_batch(input_ids) -> None:
    """Raise unless ``input_ids`` is a (batch >= 1, length >= 1) tensor of token ids."""
    if not isinstance(input_ids, torch.Tensor):
        raise TypeError(
            f"input_ids must be a torch tensor of token ids, got {type(input_ids).__name__}; use the tokenizer's "
            "output, e.g. tokenizer(prompts, return_tensors='pt').input_ids."
        )
    if input_ids.ndim != 2:
        shape = tuple(input_ids.shape)
        raise ValueError(
            f"input_ids must be a (batch, length) tensor of token ids, got {shape}; use the tokenizer's "
            "output, e.g. tokenizer(prompts, return_tensors='pt').input_ids (ids[None] for one prompt)."
        )
    if input_ids.shape[0] == 0 or input_ids.shape[1] == 0:
        raise ValueError(
            f"input_ids hold no {'prompt' if input_ids.shape[0] == 0 else 'token'} (shape {tuple(input_ids.shape)}): "
            "there is nothing to continue; skip empty batches before calling generate, and give every prompt "
            "at least one token."
        )


def dola_candidate_layers(config, layers: Union[str, list] = "high") -> list:
    """The premature layers transformers 4.53's DoLa contrasts with the final layer.

    Index i is ``hidden_states[i]`` (0 = the embedding output, i = output of block i). For an
    untied model such as GPT-NeoX/Pythia with L <= 40 layers, ``"low"`` = [0, 2, ..., L/2 - 2]
    and ``"high"`` = [L/2, L/2 + 2, ..., L - 2] (L//2 for odd L); above 40 layers "low" =
    range(start, 20, 2) and "high" = range(L - 20, L, 2). Pythia-6.9B (32 layers): high =
    16, 18, ..., 30; low = 0, 2, ..., 14. Tied models skip the embedding (start at 2 when L > 2).
    Note for GPT-NeoX: transformers applies ``embed_out`` to these hidden states directly, without
    the final layer norm.
    """
    config = getattr(config, "config", config)
    L = config.get_text_config().num_hidden_layers
    if not getattr(config, "tie_word_embeddings", False):
        start = 0
    elif L > 2:
        start = 2
    elif L == 2:
        start = 1
    else:
        start = 0
    if layers == "low":
        if start == L // 2:
            return [start]
        return list(range(start, L // 2, 2)) if L <= 40 else list(range(start, 20, 2))
    if layers == "high":
        return list(range(L // 2, L, 2)) if L <= 40 else list(range(L - 20, L, 2))
    if isinstance(layers, (list, tuple)):
        return [int(i) for i in layers if i < L]
    raise ValueError(f"layers must be 'low', 'high' or a list of layer indices, got {layers!r}.")


def dola_generate_kwargs(model, layers: Union[str, list] = "high", repetition_penalty: float = 1.2) -> dict:
    """``generate`` keyword arguments for the DoLa baseline (transformers' built-in DoLa).

    DoLa (Chuang et al., 2024) recommends ``repetition_penalty=1.2``; its own relative-top
    (alpha = 0.1) filter is always on, so "DoLa + alpha" is ``generate(model, ids, mask,
    do_sample=True, **dola_generate_kwargs(model))``. The contrasted layers are
    :func:`dola_candidate_layers`. The premature layer is chosen by a JS divergence averaged
    over the batch, so rows of one batch share it (use batches of one prompt to follow DoLa
    exactly). transformers announces moving DoLa to a Hub ``custom_generate`` recipe from 4.55.
    """
    candidates = dola_candidate_layers(model, layers)
    if not candidates:
        raise ValueError(
            f"dola_layers={layers!r} selects no layer of this {model.config.num_hidden_layers}-layer "
            "model; pass 'low', 'high' or indices below the number of layers."
        )
    return {
        "dola_layers": layers if isinstance(layers, str) else list(layers),
        "repetition_penalty": float(repetition_penalty),
    }
