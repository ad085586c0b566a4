"""Decoding with contrastive decoding (CD) and asymptotic probability decoding (APD).

Hugging Face ``LogitsProcessor``s, usable in ``model.generate(logits_processor=...)`` of the
expert LM (ELM). Units: *logits* are raw scores; *log-probabilities* are log-softmax over the
family's shared tokenizer vocabulary (``vocab_size`` tokens; ids beyond it, present only in
padded embedding matrices, always get -inf).

The next-token score of CD and APD (paper, eq. 2 and eq. 4) for one context is::

    score(w) = log_softmax(L_ELM)(w) - (1/T) * log_softmax(L_amateur)(w)   for w kept by the filters
    score(w) = -inf                                                        otherwise

with the amateur = ALM for CD and ALM' (the fine-tuned amateur) for APD. The filters (top-p,
top-k, top-p with k = 20, alpha-masking) are computed on the ELM's own distribution, as in the
paper and its code release. ``generate`` samples from softmax(score).

How to call ``generate`` (or use :func:`generate` below, which does all of this)::

    proc = ContrastiveLogitsProcessor(alm, T=2.0, filters=[TopP(0.8), TopK(20)],
                                      vocab_size=len(tokenizer))
    proc.prepare(attention_mask)            # the PROMPT's mask (left padding), once per generate
    out = elm.generate(input_ids, attention_mask=attention_mask,
                       logits_processor=LogitsProcessorList([proc]), max_new_tokens=128,
                       do_sample=True, top_k=0, top_p=1.0, temperature=1.0)

``top_k=0, top_p=1.0, temperature=1.0`` matter: ``GenerationConfig`` defaults to ``top_k=50`` and
Hugging Face appends its own warpers AFTER custom processors, so without them the CD scores
would be truncated again. Greedy decoding (``do_sample=False``) needs none of them.

The amateur keeps its own KV cache: the first call of a generation runs it on the whole prompt
(with the prompt's attention mask and position ids from the mask, so left-padded rows are
right), each later call only on the tokens appended since. A call whose ``input_ids`` are not a
continuation of the previous call's (shorter, another batch size or another prefix) starts a new
generation, which needs a freshly prepared mask when the batch has more than one row. Beam search
is not supported (its rows do not match the prompt's mask): use ``num_beams=1``.

Baselines: temperature sampling is HF's own ``TemperatureLogitsWarper`` (``generate(expert, ...,
temperature=t)`` with no processor); "LLM + filter" is :class:`FilteredLogitsProcessor`; DoLa is
transformers' built-in ``dola_layers`` (see :func:`dola_generate_kwargs`).
"""
from __future__ import annotations

import inspect
from typing import Iterable, Optional, Sequence, Union

import torch
import torch.nn.functional as F
from transformers import LogitsProcessor, LogitsProcessorList
from transformers.cache_utils import DynamicCache

NEG_INF = float("-inf")


# --------------------------------------------------------------------------------------------
# Filters: each maps the ELM's log-probabilities (B, V) to a boolean keep mask (B, V).
# --------------------------------------------------------------------------------------------


class TopP:
    """Nucleus filter: keep the most probable ELM tokens until their mass reaches ``p``.

    A token is kept when the ELM mass of the tokens ranked strictly above it is < p, so the
    token that crosses p is kept and at least one token always survives (same set as
    Hugging Face's ``TopPLogitsWarper``).
    """

    def __init__(self, p: float):
        if not 0.0 < p <= 1.0:
            raise ValueError(f"TopP needs 0 < p <= 1, got {p}; p=1.0 keeps every token.")
        self.p = float(p)

    def __call__(self, elm_logprobs: torch.Tensor) -> torch.Tensor:
        sorted_lp, order = elm_logprobs.sort(dim=-1, descending=True)
        probs = sorted_lp.exp()
        mass_above = probs.cumsum(dim=-1) - probs
        keep_sorted = mass_above < self.p
        keep_sorted[..., 0] = True
        return torch.zeros_like(keep_sorted).scatter(-1, order, keep_sorted)

    def __repr__(self) -> str:
        return f"TopP({self.p:g})"


class TopK:
    """Keep the ``k`` most probable ELM tokens (all of them when k >= vocabulary size)."""

    def __init__(self, k: int):
        if int(k) != k or k < 1:
            raise ValueError(f"TopK needs an integer k >= 1, got {k}; the paper's 'k20' is TopK(20).")
        self.k = int(k)

    def __call__(self, elm_logprobs: torch.Tensor) -> torch.Tensor:
        k = min(self.k, elm_logprobs.shape[-1])
        idx = elm_logprobs.topk(k, dim=-1).indices
        return torch.zeros_like(elm_logprobs, dtype=torch.bool).scatter(-1, idx, True)

    def __repr__(self) -> str:
        return f"TopK({self.k})"


class AlphaMask:
    """Alpha-masking of Li et al. (2022): keep tokens with p_ELM >= alpha * max p_ELM."""

    def __init__(self, alpha: float):
        if not 0.0 <= alpha <= 1.0:
            raise ValueError(f"AlphaMask needs 0 <= alpha <= 1, got {alpha}; CD's default is 0.1.")
        self.alpha = float(alpha)

    def __call__(self, elm_logprobs: torch.Tensor) -> torch.Tensor:
        if self.alpha == 0.0:
            return torch.ones_like(elm_logprobs, dtype=torch.bool)
        top = elm_logprobs.max(dim=-1, keepdim=True).values
        return elm_logprobs >= top + torch.log(torch.tensor(self.alpha, dtype=elm_logprobs.dtype))

    def __repr__(self) -> str:
        return f"AlphaMask({self.alpha:g})"


Filter = Union[TopP, TopK, AlphaMask]


def make_filters(kind: str, value: Optional[float] = None) -> list:
    """The paper's thresholding methods by name.

    ``"NA"`` -> [] (no filter), ``"alpha"`` -> [AlphaMask(value)], ``"top-p"`` -> [TopP(value)],
    ``"top-p k20"`` -> [TopP(value), TopK(20)], ``"top-k"`` -> [TopK(value)].
    (REAL sampling needs its own trained model and is not provided here.)
    """
    key = kind.strip().lower().replace("_", "-")
    if key in ("na", "none"):
        return []
    if value is None:
        raise ValueError(f"make_filters({kind!r}) needs a value, e.g. make_filters({kind!r}, 0.8).")
    if key == "alpha":
        return [AlphaMask(value)]
    if key in ("top-p", "topp"):
        return [TopP(value)]
    if key in ("top-p k20", "top-p-k20", "topp-k20", "top-pk20"):
        return [TopP(value), TopK(20)]
    if key in ("top-k", "topk"):
        return [TopK(int(value))]
    raise ValueError(f"unknown filter kind {kind!r}; use one of 'NA', 'alpha', 'top-p', 'top-p k20', 'top-k'.")


def keep_mask(elm_logprobs: torch.Tensor, filters: Iterable) -> torch.Tensor:
    """Intersection of the filters' keep masks (B, V) on the ELM's log-probabilities."""
    keep = torch.ones_like(elm_logprobs, dtype=torch.bool)
    for f in filters:
        keep &= f(elm_logprobs)
    return keep


def contrastive_scores(elm_logits: torch.Tensor, amateur_logits: torch.Tensor, T: float,
                       filters: Iterable = (), vocab_size: Optional[int] = None) -> torch.Tensor:
    """CD/APD scores (float32, shape (..., vocab_size)) from raw logits of ELM and amateur.

    ``log_softmax(ELM) - (1/T) log_softmax(amateur)`` over the first ``vocab_size`` ids, with
    tokens removed by ``filters`` (computed on the ELM) at -inf. ``T = inf`` gives the ELM's
    filtered log-probabilities.
    """
    V = vocab_size or min(elm_logits.shape[-1], amateur_logits.shape[-1])
    elm_lp = F.log_softmax(elm_logits[..., :V].float(), dim=-1)
    alm_lp = F.log_softmax(amateur_logits[..., :V].float(), dim=-1)
    scores = elm_lp - alm_lp / T
    return scores.masked_fill(~keep_mask(elm_lp, filters), NEG_INF)


# --------------------------------------------------------------------------------------------
# Logits processors
# --------------------------------------------------------------------------------------------


def _check_filters(filters) -> list:
    if filters is None:
        return []
    if callable(filters) and not isinstance(filters, (list, tuple)):
        filters = [filters]
    filters = list(filters)
    for f in filters:
        if not callable(f):
            raise TypeError(f"filter {f!r} is not callable; use TopP(p), TopK(k) or AlphaMask(alpha).")
    return filters


def _restricted_width(scores: torch.Tensor, vocab_size: Optional[int], other: Optional[int]) -> int:
    """The shared vocabulary size to work over, with clear errors."""
    width = scores.shape[-1]
    if vocab_size is None:
        if other is not None and other != width:
            raise ValueError(
                f"the expert scores have {width} ids but the amateur has {other}: padded embedding "
                "matrices differ, so pass vocab_size=len(tokenizer) (the shared tokenizer vocabulary, "
                "e.g. 50277 for Pythia)."
            )
        return width
    if vocab_size > width or (other is not None and vocab_size > other):
        raise ValueError(
            f"vocab_size={vocab_size} exceeds the expert's {width} or the amateur's {other} ids; "
            "pass the tokenizer's vocabulary size."
        )
    return vocab_size


class FilteredLogitsProcessor(LogitsProcessor):
    """The "LLM + filter" baseline: ELM log-probabilities with filtered tokens at -inf.

    Args: ``filters`` (a filter or a list, see :func:`make_filters`), ``vocab_size`` (shared
    tokenizer vocabulary; ids beyond it get -inf; default: all of the scores' ids).
    """

    def __init__(self, filters=(), vocab_size: Optional[int] = None):
        self.filters = _check_filters(filters)
        self.vocab_size = vocab_size

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        V = _restricted_width(scores, self.vocab_size, None)
        elm_lp = F.log_softmax(scores[:, :V].float(), dim=-1)
        out = torch.full(scores.shape, NEG_INF, dtype=torch.float32, device=scores.device)
        out[:, :V] = elm_lp.masked_fill(~keep_mask(elm_lp, self.filters), NEG_INF)
        return out.to(scores.dtype)


class ContrastiveLogitsProcessor(LogitsProcessor):
    """CD: ``log_softmax(ELM) - (1/T) log_softmax(ALM)``, filters on the ELM, at every step.

    Args:
        amateur: a causal LM (the ALM) sharing the ELM's tokenizer; run incrementally with its
            own KV cache on the device its weights are on.
        T: the amateur's temperature (> 0); the paper's best CD settings were 1/T = 0.5 (Pythia)
            and 0.25 (OPT). ``float('inf')`` turns the amateur off.
        filters: a filter or list of filters computed on the ELM (TopP, TopK, AlphaMask); their
            keep masks are intersected.
        vocab_size: the shared tokenizer vocabulary (required when ELM and amateur pad their
            embedding matrices to different sizes, as Pythia members do).
        attention_mask: the prompt's (B, L) attention mask; same as calling :meth:`prepare`.

    Call :meth:`prepare` with the prompt's attention mask before every ``generate`` on a padded
    batch; a batch of one prompt with no mask is taken as unpadded. A prepared mask is used by
    exactly one generation.
    """

    def __init__(self, amateur, T: float, filters=(), vocab_size: Optional[int] = None,
                 attention_mask: Optional[torch.Tensor] = None):
        if not (T > 0):
            raise ValueError(f"T must be > 0, got {T}; the amateur's scores are divided by T.")
        self.amateur = amateur.eval()
        self._takes_position_ids = "position_ids" in inspect.signature(amateur.forward).parameters
        self.T = float(T)
        self.filters = _check_filters(filters)
        self.vocab_size = vocab_size
        self._pending_mask = None
        self._reset_state()
        if attention_mask is not None:
            self.prepare(attention_mask)

    # -- state -----------------------------------------------------------------------------
    def _reset_state(self) -> None:
        self._ids = None        # (B, n) ids the amateur has seen
        self._mask = None       # (B, n) their attention mask
        self._cache = None      # the amateur's past_key_values

    def prepare(self, attention_mask: Optional[torch.Tensor]) -> "ContrastiveLogitsProcessor":
        """Give the prompt's (B, L) attention mask (1 = token, 0 = left padding) for the next
        generation, and forget the amateur's cache. Returns self."""
        if attention_mask is not None:
            if attention_mask.dim() != 2:
                raise ValueError(f"attention_mask must be (batch, prompt_length), got {tuple(attention_mask.shape)}.")
            attention_mask = attention_mask.detach().long()
        self._pending_mask = attention_mask
        self._reset_state()
        return self

    def reset(self) -> None:
        """Forget the cache and any prepared mask."""
        self._pending_mask = None
        self._reset_state()

    def _is_continuation(self, input_ids: torch.Tensor) -> bool:
        """True when ``input_ids`` extends the rows the amateur has already seen."""
        if self._ids is None:
            return False
        B, n = self._ids.shape
        if input_ids.shape[0] != B or input_ids.shape[1] <= n:
            return False
        return torch.equal(input_ids[:, :n].to(self._ids.device), self._ids)

    def _start(self, input_ids: torch.Tensor) -> torch.Tensor:
        mask = self._pending_mask
        self._pending_mask = None
        if mask is None:
            if input_ids.shape[0] > 1:
                raise ValueError(
                    f"{type(self).__name__} got a batch of {input_ids.shape[0]} prompts but no attention "
                    "mask: call processor.prepare(attention_mask) with the prompt's mask before generate "
                    "(or use apd.decoding.generate, which does it), so left padding is masked."
                )
            mask = torch.ones_like(input_ids)
        if mask.shape != input_ids.shape:
            raise ValueError(
                f"the prepared attention mask is {tuple(mask.shape)} but the prompt is {tuple(input_ids.shape)}: "
                "call prepare() with the mask of the same batch you pass to generate."
            )
        self._reset_state()
        self._ids = input_ids[:, :0]
        self._mask = mask.to(input_ids.device)[:, :0]
        return mask.to(input_ids.device)

    @torch.no_grad()
    def amateur_logits(self, input_ids: torch.LongTensor) -> torch.Tensor:
        """The amateur's raw next-token logits (B, V_amateur) for each row of ``input_ids``,
        computed incrementally from its cache."""
        if self._is_continuation(input_ids):
            n = self._ids.shape[1]
            new_ids = input_ids[:, n:]
            new_mask = torch.ones_like(new_ids)  # generate appends ones to the ELM's mask too
        else:
            new_mask = self._start(input_ids)
            new_ids = input_ids
        mask = torch.cat([self._mask, new_mask], dim=1)
        positions = (mask.cumsum(dim=1) - 1).clamp(min=0)[:, -new_ids.shape[1]:]
        device = next(self.amateur.parameters()).device
        if self._cache is None:
            self._cache = DynamicCache()
        extra = {}
        if self._takes_position_ids:  # models with absolute positions (GPT-2, OPT) need them
            extra["position_ids"] = positions.to(device)
        out = self.amateur(
            input_ids=new_ids.to(device),
            attention_mask=mask.to(device),
            past_key_values=self._cache,
            use_cache=True,
            **extra,
        )
        self._cache = out.past_key_values
        self._ids = input_ids.clone()
        self._mask = mask
        return out.logits[:, -1, :].float()

    # -- scores ----------------------------------------------------------------------------
    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        """``scores``: the ELM's (B, V_elm) logits for the next token (after any HF processors
        that ran before this one). Returns CD/APD scores (B, V_elm), -inf outside the shared
        vocabulary and for filtered tokens."""
        alm = self.amateur_logits(input_ids).to(scores.device)
        V = _restricted_width(scores, self.vocab_size, alm.shape[-1])
        out = torch.full(scores.shape, NEG_INF, dtype=torch.float32, device=scores.device)
        out[:, :V] = contrastive_scores(scores, alm, self.T, self.filters, V)
        return out.to(scores.dtype)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(T={self.T:g}, filters={self.filters}, vocab_size={self.vocab_size})"


class APDLogitsProcessor(ContrastiveLogitsProcessor):
    """APD: ``log_softmax(ELM) - (1/T) log_softmax(ALM')`` with ALM' the fine-tuned amateur.

    Same mechanics and arguments as :class:`ContrastiveLogitsProcessor`; ``T`` defaults to 1,
    the value the paper fixes for APD in FactualityPrompts.
    """

    def __init__(self, amateur_prime, T: float = 1.0, filters=(), vocab_size: Optional[int] = None,
                 attention_mask: Optional[torch.Tensor] = None):
        super().__init__(amateur_prime, T=T, filters=filters, vocab_size=vocab_size,
                         attention_mask=attention_mask)


# --------------------------------------------------------------------------------------------
# generate() with the right settings, and the baselines
# --------------------------------------------------------------------------------------------

# HF's sampling warpers, run AFTER custom processors, at values that make them do nothing
_WARPERS = {"temperature": 1.0, "top_k": 0, "top_p": 1.0, "typical_p": 1.0, "min_p": None,
            "epsilon_cutoff": 0.0, "eta_cutoff": 0.0}


def generate(expert, input_ids: torch.Tensor, attention_mask: Optional[torch.Tensor] = None,
             processors: Union[LogitsProcessor, Sequence[LogitsProcessor], None] = (),
             **generate_kwargs):
    """``expert.generate`` with our processors prepared and HF's own warpers neutralised.

    Prepares every processor that has ``prepare`` with ``attention_mask``. With sampling
    (``do_sample=True``), sets HF's warpers to do nothing (``temperature=1.0, top_k=0,
    top_p=1.0, typical_p=1.0, min_p=None, epsilon_cutoff=eta_cutoff=0``) unless given, whatever
    the model's ``generation_config`` says; giving a non-neutral one together with processors is
    an error (HF would apply it on top of the CD scores; pass filters to the processor instead).
    ``repetition_penalty`` defaults to 1.0; a value you give acts on the ELM's logits before the
    processors (DoLa's 1.2 does). Without processors, ``temperature=t`` is the
    temperature-sampling baseline (HF's ``TemperatureLogitsWarper``). Returns what
    ``expert.generate`` returns.
    """
    if processors is None:
        processors = []
    elif isinstance(processors, LogitsProcessor):
        processors = [processors]
    processors = list(processors)
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
    return expert.generate(input_ids=input_ids, logits_processor=LogitsProcessorList(processors),
                           **generate_kwargs)


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
        raise ValueError(f"dola_layers={layers!r} selects no layer of this {model.config.num_hidden_layers}-layer "
                         "model; pass 'low', 'high' or indices below the number of layers.")
    return {"dola_layers": layers if isinstance(layers, str) else list(layers),
            "repetition_penalty": float(repetition_penalty)}


# --------------------------------------------------------------------------------------------
# APD on the fly (the paper's ablation without ALM'; appendix "APD on the Fly Baseline")
# --------------------------------------------------------------------------------------------


class OnTheFlyLogitsProcessor(LogitsProcessor):
    """APD on the fly: fit a decay curve per token at every step, from ALL members' probabilities.

    At every step: each smaller member's next-token logits (each with its own KV cache, the same
    mechanics as :class:`ContrastiveLogitsProcessor`), the ELM's from ``scores``; then
    :func:`apd.curves.on_the_fly_asymptotes` over the ELM's top ``top_k`` tokens (flip, fit
    c + a exp(-max(0, b (x - d))) with Adam, flip back, renormalise over the top k) and
    :func:`apd.curves.mix_on_the_fly`. Returns log((1 - w) p_ELM + w p_AP) at the ELM's top-k ids
    and -inf everywhere else, shape (B, V_elm): sampling or greedy decoding then picks among the
    top k. ``w = 0`` is the ELM renormalised over its top k.

    Args:
        members: the smaller members as HF causal LMs, smallest (ALM) first, the ELM left out.
        log_sizes: x of every member, ELM LAST (len(members) + 1 values, increasing; natural log
            of the non-embedding parameter count, e.g. ``family.log_sizes``).
        w: the mixing weight 1/T in [0, 1] (the paper picks it from
            :data:`apd.curves.ON_THE_FLY_WEIGHTS`).
        top_k: the token set (the paper: the ELM's top 20).
        vocab_size: the shared tokenizer vocabulary (needed when members pad differently).
        attention_mask: the prompt's (B, L) mask; same as calling :meth:`prepare`.
        **fit_kwargs: passed to :func:`apd.curves.fit_curves` (iterations, lr, init, ...).

    Costs: one forward pass of every member per step plus ``iterations`` Adam steps over
    B * top_k curves; the paper calls it "much more time-consuming" than CD/APD (see
    ``scripts/benchmarks.py``). ``last_fit`` holds the :class:`apd.curves.CurveFit` of the last step.
    """

    def __init__(self, members: Sequence, log_sizes: Sequence[float], w: float, top_k: int = 20,
                 vocab_size: Optional[int] = None, attention_mask: Optional[torch.Tensor] = None,
                 **fit_kwargs):
        from apd import curves

        self._curves = curves
        members = list(members)
        if not members:
            raise ValueError("OnTheFlyLogitsProcessor needs the smaller members (at least the ALM and one "
                             "mid-size member; the ELM is the model you call generate on).")
        self.log_sizes = [float(x) for x in log_sizes]
        if len(self.log_sizes) != len(members) + 1:
            raise ValueError(f"log_sizes has {len(self.log_sizes)} values for {len(members)} smaller members "
                             f"plus the ELM; pass {len(members) + 1} (e.g. family.log_sizes), ELM last.")
        if len(self.log_sizes) < 3:
            raise ValueError("fitting a curve needs at least 3 members (two smaller ones and the ELM); pass "
                             "a mid-size member too.")
        if not all(b > a for a, b in zip(self.log_sizes, self.log_sizes[1:])):
            raise ValueError(f"log_sizes must increase (smallest member first, ELM last), got {self.log_sizes}.")
        if not 0.0 <= float(w) <= 1.0:
            raise ValueError(f"w must be in [0, 1] (the weight of the asymptotic probabilities), got {w}.")
        if int(top_k) != top_k or top_k < 1:
            raise ValueError(f"top_k must be an integer >= 1, got {top_k}; the paper uses 20.")
        self.w = float(w)
        self.top_k = int(top_k)
        self.vocab_size = vocab_size
        self.fit_kwargs = dict(fit_kwargs)
        # one incremental runner (own KV cache, mask handling) per smaller member
        self._runners = [ContrastiveLogitsProcessor(m, T=1.0) for m in members]
        self.last_fit = None
        if attention_mask is not None:
            self.prepare(attention_mask)

    def prepare(self, attention_mask: Optional[torch.Tensor]) -> "OnTheFlyLogitsProcessor":
        """Give the prompt's (B, L) attention mask for the next generation; forget the caches."""
        for r in self._runners:
            r.prepare(attention_mask)
        return self

    def reset(self) -> None:
        """Forget the caches and any prepared mask."""
        for r in self._runners:
            r.reset()

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        small = [r.amateur_logits(input_ids).to(scores.device) for r in self._runners]
        V = _restricted_width(scores, self.vocab_size, min(s.shape[-1] for s in small))
        if self.top_k > V:
            raise ValueError(f"top_k={self.top_k} exceeds the vocabulary of {V} tokens.")
        logits = torch.stack([s[:, :V] for s in small] + [scores[:, :V].float()])   # (N, B, V), ELM last
        top_ids, p_elm, p_ap, fit = self._curves.on_the_fly_asymptotes(
            logits, self.log_sizes, top_k=self.top_k, **self.fit_kwargs)
        self.last_fit = fit
        mixed = self._curves.mix_on_the_fly(p_elm, p_ap, self.w).float()
        out = torch.full(scores.shape, NEG_INF, dtype=torch.float32, device=scores.device)
        out.scatter_(-1, top_ids, mixed.log())
        return out.to(scores.dtype)

    def __repr__(self) -> str:
        return (f"OnTheFlyLogitsProcessor(members={len(self._runners) + 1}, w={self.w:g}, top_k={self.top_k}, "
                f"vocab_size={self.vocab_size})")
