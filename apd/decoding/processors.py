"""Hugging Face logits processors (``LogitsProcessor``) for CD, APD, APD on the fly, a filtered expert, and REAL.

Use them in ``expert.generate(logits_processor=...)`` or through :func:`apd.decoding.generation.generate`.
The amateur keeps its own KV cache: the first call runs it on the whole (left-padded) prompt with
the prompt's mask; later calls only on the new tokens. Beam search is not supported.
"""

from __future__ import annotations

import inspect
from typing import Optional, Sequence

import torch
import torch.nn.functional as F
from transformers import LogitsProcessor
from transformers.cache_utils import DynamicCache

from apd.base.checks import count, number
from apd.core import curves
from apd.core.contrastive import Reciprocal, contrastive_scores
from apd.core.filters import REAL, keep_mask
from apd.family.text import tokenizer_identity

NEG_INF = float("-inf")


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


def _check_vocab_size(vocab_size) -> Optional[int]:
    """None, or ``vocab_size`` as an int >= 1 (a clear error for 0, -1, 2.5 or "50")."""
    if vocab_size is None:
        return None
    return count(
        "vocab_size",
        vocab_size,
        1,
        "pass the tokenizer's vocabulary size, family.vocab_size or "
        "len(tokenizer), or leave it None to use every id of the scores",
    )


def _check_expert(scores: torch.Tensor, V: int) -> None:
    """Raise when the expert's logits over the shared vocabulary hold NaN or +inf: every score of the
    row would be NaN or -inf and generation would emit token 0 for ever."""
    bad = torch.isnan(scores[:, :V]) | (scores[:, :V] == float("inf"))
    if bool(bad.any()):
        rows = torch.nonzero(bad.any(-1)).flatten().tolist()
        raise ValueError(
            f"the expert's logits hold NaN or +inf (rows {rows[:5]} of the batch, {int(bad.sum())} values), so "
            "there is no distribution to decode from; check the expert (its weights, dtype overflow in "
            "half precision: try dtype=torch.float32) and any logits processor that runs before this one."
        )


def check_ids(model, input_ids: torch.Tensor, who: str) -> None:
    """Raise when ``input_ids`` hold an id outside ``model``'s embedding rows (not torch's IndexError)."""
    n = model.get_input_embeddings().num_embeddings
    if input_ids.numel() and (int(input_ids.min()) < 0 or int(input_ids.max()) >= n):
        raise ValueError(
            f"input_ids hold ids in [{int(input_ids.min())}, {int(input_ids.max())}] but the {who} has {n} "
            f"embedding rows (ids 0 to {n - 1}); tokenize with the family's tokenizer (family.tokenizer), "
            "whose ids all lie below family.vocab_size."
        )


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


_BEAM_MESSAGE = (
    "{name} does not support beam search ({why}): the amateur keeps one cache per sequence and beam "
    "search duplicates and reorders sequences. Use greedy decoding or sampling (num_beams=1), e.g. "
    "apd.generate(model, input_ids, attention_mask, processor, do_sample=...); calling prepare() again "
    "does not help. (If this is not beam search but a new generation, call prepare(attention_mask) "
    "before it.)"
)


class FilteredLogitsProcessor(LogitsProcessor):
    """The "LLM + filter" baseline: ELM log-probabilities with filtered tokens at -inf.

    Args: ``filters`` (a filter or a list, see :func:`make_filters`), ``vocab_size`` (shared
    tokenizer vocabulary; ids beyond it get -inf; default: all of the scores' ids).

    Example:
        >>> import apd
        >>> fam, built = apd.get_family("pico", "smoke", device="cpu", progress=False)  # trained once, then cached
        >>> enc = fam.tokenizer(["Ada was born in"], return_tensors="pt")
        >>> elm_only = apd.FilteredLogitsProcessor(apd.make_filters("top-p", 0.8), vocab_size=fam.vocab_size)
        >>> out = apd.generate(fam.model(fam.elm), enc.input_ids, enc.attention_mask, elm_only, max_new_tokens=4,
        ...                    do_sample=False, pad_token_id=fam.tokenizer.pad_token_id)
        >>> out.shape[0]
        1
    """

    def __init__(self, filters=(), vocab_size: Optional[int] = None):
        self.filters = _check_filters(filters)
        self.vocab_size = _check_vocab_size(vocab_size)

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        V = _restricted_width(scores, self.vocab_size, None)
        _check_expert(scores, V)
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
            and 0.25 (OPT). ``float('inf')`` turns the amateur off. Kept as ``T``; ``inv_T`` holds
            :class:`apd.core.contrastive.Reciprocal` ``(T)``, what the score takes (it divides by T).
        filters: a filter or list of filters computed on the ELM (TopP, TopK, AlphaMask); their
            keep masks are intersected.
        vocab_size: the shared tokenizer vocabulary (required when ELM and amateur pad their
            embedding matrices to different sizes, as Pythia members do).
        attention_mask: the prompt's (B, L) attention mask; same as calling :meth:`prepare`.

    Call :meth:`prepare` with the prompt's attention mask before every ``generate`` on a padded
    batch; a batch of one prompt with no mask is taken as unpadded. A prepared mask is used by
    exactly one generation (:func:`apd.generate` prepares it for you).

    Example:
        >>> import apd
        >>> fam, built = apd.get_family("pico", "smoke", device="cpu", progress=False)  # trained once, then cached
        >>> enc = fam.tokenizer(["Ada was born in"], return_tensors="pt")
        >>> cd = apd.ContrastiveLogitsProcessor(fam.model(fam.alm), T=2.0, filters=apd.make_filters("top-p k20", 0.8),
        ...                                     vocab_size=fam.vocab_size)
        >>> out = apd.generate(fam.model(fam.elm), enc.input_ids, enc.attention_mask, cd, max_new_tokens=4,
        ...                    do_sample=False, pad_token_id=fam.tokenizer.pad_token_id)
        >>> out.shape[0]
        1
    """

    def __init__(
        self,
        amateur,
        T: float,
        filters=(),
        vocab_size: Optional[int] = None,
        attention_mask: Optional[torch.Tensor] = None,
    ):
        T = number("T", T, "the amateur's temperature, e.g. 2.0")
        if not (T > 0):
            raise ValueError(f"T must be > 0, got {T}; the amateur's scores are divided by T.")
        self.amateur = amateur.eval()
        self._takes_position_ids = "position_ids" in inspect.signature(amateur.forward).parameters
        self.T = T
        self.inv_T = Reciprocal(T)
        self.filters = _check_filters(filters)
        self.vocab_size = _check_vocab_size(vocab_size)
        self._pending_mask = None
        self._reset_state()
        if attention_mask is not None:
            self.prepare(attention_mask)

    # -- state -----------------------------------------------------------------------------
    def _reset_state(self) -> None:
        self._ids = None  # (B, n) ids the amateur has seen
        self._mask = None  # (B, n) their attention mask
        self._cache = None  # the amateur's past_key_values

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
        rows = input_ids.shape[0]
        if (
            mask is not None
            and rows != mask.shape[0]
            and rows % mask.shape[0] == 0
            and input_ids.shape[1] == mask.shape[1]
        ):
            raise ValueError(
                _BEAM_MESSAGE.format(name=type(self).__name__, why=f"{rows} rows for {mask.shape[0]} prompts")
            )
        if (
            mask is None
            and self._ids is not None
            and self._ids.shape[0] == rows
            and input_ids.shape[1] == self._ids.shape[1] + 1
        ):
            # one token longer than the last step but not its continuation: rows were reordered
            raise ValueError(
                _BEAM_MESSAGE.format(name=type(self).__name__, why="the rows were reordered between steps")
            )
        if mask is None:
            if input_ids.shape[0] > 1:
                raise ValueError(
                    f"{type(self).__name__} got a batch of {input_ids.shape[0]} prompts but no attention "
                    "mask: call processor.prepare(attention_mask) with the prompt's mask before generate "
                    "(or use apd.decoding.generation.generate, which does it), so left padding is masked."
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
            check_ids(self.amateur, new_ids, "amateur")
        mask = torch.cat([self._mask, new_mask], dim=1)
        positions = (mask.cumsum(dim=1) - 1).clamp(min=0)[:, -new_ids.shape[1] :]
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
        vocabulary and for filtered tokens. An amateur at -inf on a token the ELM keeps (a score of
        +inf, no distribution to sample from) is a ValueError naming it, as are NaN and +inf logits."""
        alm = self.amateur_logits(input_ids).to(scores.device)
        V = _restricted_width(scores, self.vocab_size, alm.shape[-1])
        _check_expert(scores, V)
        out = torch.full(scores.shape, NEG_INF, dtype=torch.float32, device=scores.device)
        out[:, :V] = contrastive_scores(scores, alm, self.inv_T, filters=self.filters, vocab_size=V, check_finite=True)
        return out.to(scores.dtype)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(T={self.T:g}, filters={self.filters}, vocab_size={self.vocab_size})"


class APDLogitsProcessor(ContrastiveLogitsProcessor):
    """APD: ``log_softmax(ELM) - (1/T) log_softmax(ALM')`` with ALM' the fine-tuned amateur.

    Same mechanics and arguments as :class:`ContrastiveLogitsProcessor`; ``T`` defaults to 1,
    the value the paper fixes for APD in FactualityPrompts.

    Example:
        >>> import apd
        >>> fam, built = apd.get_family("pico", "smoke", device="cpu", progress=False)  # trained once, then cached
        >>> enc = fam.tokenizer(["Ada was born in"], return_tensors="pt")
        >>> alm_prime = apd.load_alm_prime(apd.apd_model(fam, built, scale="smoke", progress=False), device="cpu")
        >>> proc = apd.APDLogitsProcessor(alm_prime, T=1.0, filters=apd.make_filters("top-p k20", 0.8),
        ...                               vocab_size=fam.vocab_size)
        >>> out = apd.generate(fam.model(fam.elm), enc.input_ids, enc.attention_mask, proc, max_new_tokens=4,
        ...                    do_sample=False, pad_token_id=fam.tokenizer.pad_token_id)
        >>> out.shape[0]
        1
    """

    def __init__(
        self,
        amateur_prime,
        T: float = 1.0,
        filters=(),
        vocab_size: Optional[int] = None,
        attention_mask: Optional[torch.Tensor] = None,
    ):
        super().__init__(amateur_prime, T=T, filters=filters, vocab_size=vocab_size, attention_mask=attention_mask)


class OnTheFlyLogitsProcessor(LogitsProcessor):
    """APD on the fly: fit a decay curve per token at every step, from ALL members' probabilities.

    At every step: each smaller member's next-token logits (each with its own KV cache, the same
    mechanics as :class:`ContrastiveLogitsProcessor`), the ELM's from ``scores``; then
    :func:`apd.core.curves.on_the_fly_asymptotes` over the ELM's top ``top_k`` tokens (flip, fit
    c + a exp(-max(0, b (x - d))) with Adam, flip back, renormalise over the top k) and
    :func:`apd.core.curves.mix_on_the_fly`. Returns log((1 - w) p_ELM + w p_AP) at the ELM's top-k ids
    and -inf everywhere else, shape (B, V_elm): sampling or greedy decoding then picks among the
    top k. ``w = 0`` is the ELM renormalised over its top k.

    Args:
        members: the smaller members as HF causal LMs, smallest (ALM) first, the ELM left out.
        log_sizes: x of every member, ELM LAST (len(members) + 1 values, increasing; natural log
            of the non-embedding parameter count, e.g. ``family.log_sizes``).
        w: the mixing weight in [0, 1] of the asymptotic probabilities (the paper picks it from
            :data:`apd.core.curves.ON_THE_FLY_WEIGHTS`).
        top_k: the token set (the paper: the ELM's top 20).
        vocab_size: the shared tokenizer vocabulary (needed when members pad differently).
        attention_mask: the prompt's (B, L) mask; same as calling :meth:`prepare`.
        **fit_kwargs: passed to :func:`apd.core.curves.fit_curves` (iterations, lr, init, ...).

    Costs: one forward pass of every member per step plus ``iterations`` Adam steps over
    B * top_k curves; the paper calls it "much more time-consuming" than CD/APD (see
    ``scripts/benchmarks.py``). ``last_fit`` holds the :class:`apd.core.curves.CurveFit` of the last step.
    A row's fit depends on that row alone, and its start on the data continuously, so the rounding by
    which a batched forward pass differs from a single one does not choose its tokens
    (``tests/test_batch_invariance.py``: a batch of 8 matches each prompt alone within 1e-5 of
    probability at 30 steps, 1e-3 at the paper's 400).

    Example:
        >>> import apd
        >>> fam, built = apd.get_family("pico", "smoke", device="cpu", progress=False)  # trained once, then cached
        >>> enc = fam.tokenizer(["Ada was born in"], return_tensors="pt")
        >>> smaller = [fam.model(name) for name in fam.names[:-1]]
        >>> fly = apd.OnTheFlyLogitsProcessor(smaller, fam.log_sizes, w=0.5, vocab_size=fam.vocab_size, iterations=50)
        >>> out = apd.generate(fam.model(fam.elm), enc.input_ids, enc.attention_mask, fly, max_new_tokens=4,
        ...                    do_sample=False, pad_token_id=fam.tokenizer.pad_token_id)
        >>> out.shape[0]
        1
    """

    def __init__(
        self,
        members: Sequence,
        log_sizes: Sequence[float],
        w: float,
        top_k: int = 20,
        vocab_size: Optional[int] = None,
        attention_mask: Optional[torch.Tensor] = None,
        **fit_kwargs,
    ):

        self._curves = curves
        members = list(members)
        if not members:
            raise ValueError(
                "OnTheFlyLogitsProcessor needs the smaller members (at least the ALM and one "
                "mid-size member; the ELM is the model you call generate on)."
            )
        self.log_sizes = [
            number("log_sizes", x, "natural logs of the sizes, e.g. family.log_sizes") for x in log_sizes
        ]
        if len(self.log_sizes) != len(members) + 1:
            raise ValueError(
                f"log_sizes has {len(self.log_sizes)} values for {len(members)} smaller members "
                f"plus the ELM; pass {len(members) + 1} (e.g. family.log_sizes), ELM last."
            )
        if len(self.log_sizes) < 3:
            raise ValueError(
                "fitting a curve needs at least 3 members (two smaller ones and the ELM); pass a mid-size member too."
            )
        if not all(b > a for a, b in zip(self.log_sizes, self.log_sizes[1:])):
            raise ValueError(f"log_sizes must increase (smallest member first, ELM last), got {self.log_sizes}.")
        w = number("w", w, "the mixing weight of the asymptotic probabilities, in [0, 1]")
        if not 0.0 <= w <= 1.0:
            raise ValueError(f"w must be in [0, 1] (the mixing weight of the asymptotic probabilities), got {w}.")
        self.w = w
        self.top_k = count("top_k", top_k, 1, "the paper uses 20")
        self.vocab_size = _check_vocab_size(vocab_size)
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
        _check_expert(scores, V)
        if self.top_k > V:
            raise ValueError(f"top_k={self.top_k} exceeds the vocabulary of {V} tokens.")
        logits = torch.stack([s[:, :V] for s in small] + [scores[:, :V].float()])  # (N, B, V), ELM last
        top_ids, p_elm, p_ap, fit = self._curves.on_the_fly_asymptotes(
            logits, self.log_sizes, top_k=self.top_k, **self.fit_kwargs
        )
        self.last_fit = fit
        mixed = self._curves.mix_on_the_fly(p_elm, p_ap, self.w).float()
        out = torch.full(scores.shape, NEG_INF, dtype=torch.float32, device=scores.device)
        out.scatter_(-1, top_ids, mixed.log())
        return out.to(scores.dtype)

    def __repr__(self) -> str:
        return (
            f"OnTheFlyLogitsProcessor(members={len(self._runners) + 1}, w={self.w:g}, top_k={self.top_k}, "
            f"vocab_size={self.vocab_size})"
        )


class REALLogitsProcessor(LogitsProcessor):
    """REAL sampling: a per-row, per-step top-p from a THF model, on the ELM's distribution.

    At every step the THF model reads each row's last ``window`` tokens (recomputed; left padding
    masked, positions counted from each row's first token) and gives the asymptotic entropy c and
    the curve at the largest member, H_last; top-p = min(1, exp((c - H_last) / T_r))
    (:func:`apd.core.filters.real_top_p`). The nucleus is computed on the ELM's distribution by the
    :class:`apd.core.filters.REAL` filter among ``processor``'s filters, so with CD or APD the
    contrastive scores are masked by it.

    Args:
        thf: a THF model (:func:`apd.load_thf`), on any device.
        T_r: the decay temperature (> 0; the paper's APD + REAL: 4.0). Adds a REAL filter to
            ``processor`` (its filters are copied); leave it None when they already hold one
            (``make_filters("REAL", T_r)``).
        processor: what REAL thresholds: a :class:`FilteredLogitsProcessor` (ELM + REAL, the
            default), :class:`ContrastiveLogitsProcessor` (CD + REAL) or :class:`APDLogitsProcessor`
            (APD + REAL).
        window: tokens the THF model reads (the release: 40).
        tokenizer: the family's tokenizer; a THF model trained with another one is an error.
        vocab_size: the shared vocabulary (for the default processor).
        pad_token_id: the id generation appends to rows that have ended; a row whose last token is it
            is left out of ``mean_top_p`` (its threshold reads padding).

    ``last_top_p`` holds the (B,) thresholds of the last step; ``mean_top_p`` the mean threshold
    over every (row, step) since the last :meth:`prepare` (rows that have ended left out), with
    ``top_p_sum`` and ``top_p_count`` behind it.

    Example:
        >>> import apd
        >>> fam, built = apd.get_family("pico", "smoke", device="cpu", progress=False)  # trained once, then cached
        >>> thf = apd.load_thf(apd.thf_model(fam, built, scale="smoke", progress=False), device="cpu")
        >>> cd = apd.ContrastiveLogitsProcessor(fam.model(fam.alm), T=2.0, filters=apd.make_filters("REAL", 4.0),
        ...                                     vocab_size=fam.vocab_size)
        >>> real = apd.REALLogitsProcessor(thf, processor=cd, tokenizer=fam.tokenizer)      # CD + REAL
        >>> enc = fam.tokenizer(["Ada was born in"], return_tensors="pt")
        >>> out = apd.generate(fam.model(fam.elm), enc.input_ids, enc.attention_mask, real, max_new_tokens=4,
        ...                    do_sample=True, pad_token_id=fam.tokenizer.pad_token_id)
        >>> out.shape[0], bool((real.last_top_p <= 1).all())
        (1, True)
    """

    def __init__(
        self,
        thf,
        T_r: Optional[float] = None,
        processor: Optional[LogitsProcessor] = None,
        window: int = 40,
        tokenizer=None,
        vocab_size: Optional[int] = None,
        attention_mask: Optional[torch.Tensor] = None,
        pad_token_id: Optional[int] = None,
    ):
        if T_r is not None and not number("T_r", T_r, "REAL's decay temperature, e.g. 4.0") > 0:
            raise ValueError(f"REAL's decay temperature T_r must be > 0, got {T_r}; the paper's APD + REAL uses 4.0.")
        window = count("window", window, 1, "the release reads 40 tokens")
        if not hasattr(thf, "at_last") or not hasattr(thf, "log_sizes"):
            raise TypeError(f"thf must be a THF model (apd.load_thf), got {type(thf).__name__}.")
        if tokenizer is not None and getattr(thf, "tokenizer_id", None) not in (None, tokenizer_identity(tokenizer)):
            raise ValueError(
                "the THF model was trained with another tokenizer than the family's: REAL reads the "
                "generated ids with it. Train a THF model for this family (apd.thf_model(fam, built))."
            )
        if processor is None:
            if T_r is None:
                raise ValueError(
                    "give T_r (REAL's decay temperature, e.g. 4.0) or a processor whose filters hold "
                    "make_filters('REAL', T_r)."
                )
            processor = FilteredLogitsProcessor([REAL(T_r)], vocab_size=vocab_size)
        filters = getattr(processor, "filters", None)
        if filters is None:
            raise TypeError(
                f"{type(processor).__name__} takes no filters; REAL thresholds a FilteredLogitsProcessor, "
                "ContrastiveLogitsProcessor or APDLogitsProcessor."
            )
        reals = [f for f in filters if isinstance(f, REAL)]
        if T_r is not None and not reals:
            processor.filters = list(filters) + [REAL(T_r)]
            reals = processor.filters[-1:]
        elif T_r is not None and any(f.T_r != float(T_r) for f in reals):
            raise ValueError(f"the processor's filters hold {reals} and T_r={T_r} was given too; give one of them.")
        if not reals:
            raise ValueError(f"{processor!r} has no REAL filter: pass T_r, or filters=make_filters('REAL', T_r).")
        self.thf = thf.eval()
        self.processor = processor
        self.reals = reals
        self.window = int(window)
        self.pad_token_id = None if pad_token_id is None else int(pad_token_id)
        self.last_top_p = None
        self.top_p_sum, self.top_p_count = 0.0, 0
        self._prompt_mask = None
        if attention_mask is not None:
            self.prepare(attention_mask)

    def prepare(self, attention_mask: Optional[torch.Tensor]) -> "REALLogitsProcessor":
        """Give the prompt's (B, L) attention mask (0 = left padding) for the next generation."""
        self._prompt_mask = None if attention_mask is None else attention_mask.detach().long()
        self.top_p_sum, self.top_p_count = 0.0, 0
        if hasattr(self.processor, "prepare"):
            self.processor.prepare(attention_mask)
        return self

    def reset(self) -> None:
        """Forget the prepared mask (and the wrapped processor's state)."""
        self._prompt_mask = None
        if hasattr(self.processor, "reset"):
            self.processor.reset()

    @torch.no_grad()
    def thresholds(self, input_ids: torch.LongTensor) -> torch.Tensor:
        """THF's c and H_last over each row's last ``window`` tokens -> (B,) top-p; sets the REAL filters."""
        B, L = input_ids.shape
        mask = torch.ones(B, L, dtype=torch.long, device=input_ids.device)
        pm = self._prompt_mask
        if pm is not None and pm.shape[0] == B and pm.shape[1] <= L:
            mask[:, : pm.shape[1]] = pm.to(input_ids.device)
        out = self.thf.at_last(input_ids, mask, window=self.window)
        c, h_last = out.c, out.h_last
        for f in self.reals:
            f.set_entropies(c, h_last)
        self.last_top_p = self.reals[0].top_p
        running = torch.ones(B, dtype=torch.bool, device=input_ids.device)
        if self.pad_token_id is not None and (pm is None or L > pm.shape[1]):  # a prompt's own last token counts
            running = input_ids[:, -1] != self.pad_token_id
        self.top_p_sum += float(self.last_top_p[running.to(self.last_top_p.device)].double().sum())
        self.top_p_count += int(running.sum())
        return self.last_top_p

    @property
    def mean_top_p(self) -> float:
        """The mean REAL threshold over every (row, step) since :meth:`prepare` (NaN before any step)."""
        return self.top_p_sum / self.top_p_count if self.top_p_count else float("nan")

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        self.thresholds(input_ids)
        return self.processor(input_ids, scores)

    def __repr__(self) -> str:
        return f"REALLogitsProcessor({self.processor!r}, window={self.window})"
