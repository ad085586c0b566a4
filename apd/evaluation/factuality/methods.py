"""Decoding methods of the factuality sweep: distribution modification + threshold.

Distributions: ELM, Temperature, CD (ELM - ALM/T), APD (ELM - ALM'/T), DoLa. Thresholds: NA,
alpha, top-p, top-p k20, REAL (value T_r; needs a THF model), all on the ELM (:mod:`apd.core.filters`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Optional, Sequence

import torch
import torch.nn.functional as F
from transformers import LogitsProcessor

from apd.base.checks import bounded, count, number
from apd.core.filters import make_filters
from apd.decoding import generation, processors

DISTRIBUTIONS = ("ELM", "Temperature", "CD", "APD", "DoLa")


THRESHOLD_NAMES = ("NA", "alpha", "top-p", "top-p k20", "REAL")


@dataclass(frozen=True)
class Method:
    """One decoding setting, "distribution + threshold" as the paper names them.

    dist: ``ELM``, ``Temperature``, ``CD``, ``APD`` or ``DoLa``.
    threshold: ``NA``, ``alpha``, ``top-p``, ``top-p k20`` or ``REAL`` (computed on the ELM's
        distribution; DoLa always uses its own relative-top alpha = 0.1, so its threshold is ``alpha``).
    value: p for the top-p thresholds, alpha for ``alpha``, T_r for ``REAL``; None for ``NA``.
    T: the amateur's temperature for CD/APD (score = log p_ELM - log p_amateur / T), the softmax
        temperature for ``Temperature``; None otherwise.
    dola_layers: ``"low"`` or ``"high"`` premature layers for DoLa.
    """

    dist: str
    threshold: str = "NA"
    value: Optional[float] = None
    T: Optional[float] = None
    dola_layers: Optional[str] = None

    def __post_init__(self):
        if self.T is not None:  # checked, not converted: value and T enter cache keys as given
            bounded("Method's T", self.T, above=0, hint="the paper uses T = 1 for APD")
        if self.value is not None and self.threshold in ("top-p", "top-p k20"):
            bounded("Method's value (top-p's p)", self.value, above=0, maximum=1, hint="p = 1 keeps every token")
        elif self.value is not None and self.threshold == "alpha":
            bounded("Method's value (alpha)", self.value, 0, maximum=1, hint="CD's default is 0.1")
        elif self.value is not None and self.threshold == "REAL":
            bounded("Method's value (REAL's T_r)", self.value, above=0, hint="the paper's APD + REAL uses T_r = 4.0")
        if self.dist not in DISTRIBUTIONS:
            raise ValueError(f"unknown distribution {self.dist!r}; use one of {DISTRIBUTIONS}.")
        if self.threshold not in THRESHOLD_NAMES:
            raise ValueError(f"unknown threshold {self.threshold!r}; use one of {THRESHOLD_NAMES}.")
        if (self.threshold == "NA") != (self.value is None):
            raise ValueError(
                f"{self.dist} + {self.threshold}: give value (p or alpha) exactly when the "
                f"threshold is not 'NA', got value={self.value!r}."
            )
        if self.dist in ("CD", "APD", "Temperature") and not (self.T is not None and self.T > 0):
            raise ValueError(
                f"{self.dist} needs a temperature T > 0, got T={self.T!r}; the paper uses T = 1 "
                "for APD and picks CD's from {1, 1.33, 2, 4, 10}."
            )
        if self.dist == "Temperature" and self.threshold != "NA":
            raise ValueError("temperature sampling is the paper's 'Temperature + NA': use threshold='NA'.")
        if self.threshold == "REAL" and not (isinstance(self.value, (int, float)) and self.value > 0):
            raise ValueError(
                f"{self.dist} + REAL: value is REAL's decay temperature T_r and must be > 0, got "
                f"{self.value!r}; the paper's APD + REAL uses T_r = 4.0."
            )
        if self.dist == "DoLa" and (self.threshold != "alpha" or self.dola_layers not in ("low", "high")):
            raise ValueError(
                "DoLa is 'DoLa + alpha' (its built-in relative-top filter, alpha = 0.1) with "
                "dola_layers='low' or 'high': Method('DoLa', 'alpha', 0.1, dola_layers='low')."
            )

    @property
    def curve(self) -> str:
        """The curve this setting is a point of (its sweep variable left out): p for the top-p
        thresholds, T for temperature sampling and for CD + alpha."""
        if self.dist == "Temperature":
            return "Temperature + NA"
        if self.dist == "DoLa":
            return f"DoLa {self.dola_layers} + alpha"
        if self.dist == "ELM":
            return f"ELM + {self.threshold}"
        if self.threshold == "alpha":
            return f"{self.dist} + alpha"
        if self.dist == "APD" and self.T == 1.0:
            return f"APD + {self.threshold}"
        return f"{self.dist} T={self.T:g} + {self.threshold}"

    @property
    def label(self) -> str:
        """A unique, readable name, e.g. ``CD T=2 + top-p k20 (p=0.8)``."""
        if self.dist == "Temperature":
            return f"Temperature T={self.T:g} + NA"
        if self.dist == "DoLa":
            return f"DoLa {self.dola_layers} + alpha"
        head = "ELM" if self.dist == "ELM" else f"{self.dist} T={self.T:g}"
        if self.threshold == "NA":
            return f"{head} + NA"
        knob = {"alpha": "alpha", "REAL": "T_r"}.get(self.threshold, "p")
        return f"{head} + {self.threshold} ({knob}={self.value:g})"

    @property
    def role(self) -> str:
        """The row role of :mod:`apd.report.paper` (``elm``, ``cd``, ``apd``) or the distribution."""
        return {"ELM": "elm", "CD": "cd", "APD": "apd"}.get(self.dist, self.dist.lower())


def paper_methods(
    p_grid: Sequence[float] = (0.4, 0.6, 0.8, 0.95),
    temperatures: Sequence[float] = (0.6, 0.8, 1.0),
    cd_T: float = 2.0,
    cd_T_grid: Sequence[float] = (1.0, 4.0),
    cd_alpha_T_grid: Sequence[float] = (1.0, 2.0, 4.0),
    alpha: float = 0.1,
    apd_T: float = 1.0,
    table_ps: Sequence[float] = (0.8, 0.6),
    dola_layers: Sequence[str] = ("low", "high"),
    include: Optional[Iterable[str]] = None,
) -> list[Method]:
    """The paper's methods for the diversity-factuality curves, in a fixed order, no duplicates.

    - ``ELM + top-p`` over ``p_grid``; ``ELM + top-p k20`` at ``table_ps`` (Table 1's first row);
    - ``Temperature + NA`` over ``temperatures``;
    - ``CD + alpha`` (alpha-masking) over ``cd_alpha_T_grid``;
    - ``CD T=cd_T + top-p k20`` over ``p_grid`` and ``table_ps``; CD's temperature tuning: every T
      of ``cd_T_grid`` at p = ``table_ps[0]``;
    - ``APD + top-p`` and ``APD + top-p k20`` (T = ``apd_T``) over ``p_grid`` (+ ``table_ps``);
    - ``DoLa low + alpha`` and ``DoLa high + alpha`` (the paper's "DoLa + alpha" and "DoLa Last + alpha").

    ``include``: keep only these curves (e.g. ``{"ELM + top-p k20", "CD T=2 + top-p k20",
    "APD + top-p k20"}`` for Table 1's rows); an unknown name is an error.
    """
    k20 = sorted(set(map(float, p_grid)) | set(map(float, table_ps)))
    out = [Method("ELM", "top-p", float(p)) for p in p_grid]
    out += [Method("ELM", "top-p k20", float(p)) for p in table_ps]
    out += [Method("Temperature", "NA", None, float(t)) for t in temperatures]
    out += [Method("CD", "alpha", float(alpha), float(t)) for t in cd_alpha_T_grid]
    out += [Method("CD", "top-p k20", p, float(cd_T)) for p in k20]
    if table_ps:
        out += [Method("CD", "top-p k20", float(table_ps[0]), float(t)) for t in cd_T_grid]
    out += [Method("APD", "top-p", float(p), float(apd_T)) for p in p_grid]
    out += [Method("APD", "top-p k20", p, float(apd_T)) for p in k20]
    out += [Method("DoLa", "alpha", 0.1, None, layers) for layers in dola_layers]
    out = list(dict.fromkeys(out))
    if include is not None:
        include = set(include)
        known = {m.curve for m in out}
        unknown = include - known
        if unknown:
            raise ValueError(f"unknown curve(s) {sorted(unknown)}; the curves of these settings are {sorted(known)}.")
        out = [m for m in out if m.curve in include]
    return out


REAL_DISTRIBUTIONS = ("ELM", "CD", "APD")


def real_methods(
    T_r_grid: Sequence[float] = (1.0, 2.0, 4.0),
    cd_T: float = 2.0,
    apd_T: float = 1.0,
    dists: Sequence[str] = REAL_DISTRIBUTIONS,
) -> list[Method]:
    """REAL sampling's settings of the sweep: ``ELM + REAL`` (REAL alone), ``CD T=cd_T + REAL`` and
    ``APD + REAL`` at every T_r of ``T_r_grid`` (the paper's APD + REAL row: T_r = 4.0), distribution
    by distribution, no duplicates. Each needs a THF model (``Decoders(..., thf=...)``). An empty
    grid gives no method (REAL left out).

    Example:
        >>> [m.label for m in real_methods((2.0, 4.0), dists=("APD",))]
        ['APD T=1 + REAL (T_r=2)', 'APD T=1 + REAL (T_r=4)']
        >>> sorted({m.curve for m in real_methods((4.0,))})
        ['APD + REAL', 'CD T=2 + REAL', 'ELM + REAL']
    """
    if isinstance(T_r_grid, (int, float)):
        raise TypeError(
            f"T_r_grid must be a list of temperatures, got the number {T_r_grid!r}; wrap it: [{T_r_grid!r}]."
        )
    unknown = [d for d in dists if d not in REAL_DISTRIBUTIONS]
    if unknown:
        raise ValueError(f"REAL thresholds {', '.join(REAL_DISTRIBUTIONS)} in this sweep, got {unknown}.")
    T = {"ELM": None, "CD": float(cd_T), "APD": float(apd_T)}
    out = [Method(d, "REAL", float(t), T[d]) for d in REAL_DISTRIBUTIONS if d in dists for t in T_r_grid]
    return list(dict.fromkeys(out))


def table6_methods(T_r: float = 4.0, cd_T: float = 2.0, apd_T: float = 1.0, p: float = 0.8) -> list[Method]:
    """The rows of the paper's Table 6 (its automatic columns): the ELM with top-p at p = 1.0 (plain
    sampling), CD and APD with top-p k20 at ``p``, CD + REAL and APD + REAL at ``T_r``.

    Example:
        >>> [m.label for m in table6_methods()]
        ['ELM + top-p (p=1)', 'CD T=2 + top-p k20 (p=0.8)', 'APD T=1 + top-p k20 (p=0.8)', 'CD T=2 + REAL (T_r=4)', 'APD T=1 + REAL (T_r=4)']
    """
    return [
        Method("ELM", "top-p", 1.0),
        Method("CD", "top-p k20", float(p), float(cd_T)),
        Method("APD", "top-p k20", float(p), float(apd_T)),
        Method("CD", "REAL", float(T_r), float(cd_T)),
        Method("APD", "REAL", float(T_r), float(apd_T)),
    ]


def table1_methods(table_ps: Sequence[float] = (0.8, 0.6), cd_T: float = 2.0, apd_T: float = 1.0) -> list[Method]:
    """Table 1's rows: ELM, CD and APD with top-p k20 at each p of ``table_ps``."""
    return [
        Method(d, "top-p k20", float(p), t)
        for d, t in (("ELM", None), ("CD", float(cd_T)), ("APD", float(apd_T)))
        for p in table_ps
    ]


class TemperatureLogitsProcessor(LogitsProcessor):
    """Temperature sampling over the shared vocabulary: ``log_softmax(L_ELM)[:V] / T``, ids beyond
    ``vocab_size`` (padded embedding rows) at -inf. Returns scores of shape (B, V_elm)."""

    def __init__(self, T: float, vocab_size: Optional[int] = None):
        if not number("T", T, "the sampling temperature, e.g. 0.8") > 0:
            raise ValueError(f"temperature must be > 0, got {T}.")
        self.T = float(T)
        self.vocab_size = None if vocab_size is None else count("vocab_size", vocab_size, 1, "e.g. family.vocab_size")

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        V = self.vocab_size or scores.shape[-1]
        out = torch.full(scores.shape, processors.NEG_INF, dtype=torch.float32, device=scores.device)
        out[:, :V] = F.log_softmax(scores[:, :V].float(), dim=-1) / self.T
        return out.to(scores.dtype)


class Decoders:
    """The models a sweep decodes with: the ELM, its tokenizer, the ALM (CD) and ALM' (APD).

    vocab_size: the shared tokenizer vocabulary (``family.vocab_size``); ids beyond it are never
    sampled. ``alm``/``alm_prime`` may be None when no method needs them.
    """

    def __init__(
        self,
        elm,
        tokenizer,
        alm=None,
        alm_prime=None,
        vocab_size: Optional[int] = None,
        thf=None,
        real_window: int = 40,
    ):
        self.elm = elm.eval()
        self.thf = thf.eval() if thf is not None else None  # REAL's THF model (apd.load_thf)
        self.real_window = int(real_window)
        self.tokenizer = tokenizer
        self.alm = alm.eval() if alm is not None else None
        self.alm_prime = alm_prime.eval() if alm_prime is not None else None
        self.vocab_size = int(vocab_size or len(tokenizer))
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
        if pad is None:
            raise ValueError("the tokenizer has neither a pad nor an EOS token; set tokenizer.pad_token first.")
        self.pad_id = int(pad)

    @property
    def device(self) -> torch.device:
        return next(self.elm.parameters()).device

    def processors_and_kwargs(self, method: Method) -> tuple[list, dict]:
        """The logits processors and extra ``generate`` keyword arguments of ``method``."""
        procs, kwargs = self._processors_and_kwargs(method)
        if method.threshold != "REAL":
            return procs, kwargs
        if self.thf is None:
            raise ValueError(
                f"{method.label} needs REAL's THF model: Decoders(..., thf=apd.load_thf(apd.thf_model(fam, built)))."
            )
        return [
            processors.REALLogitsProcessor(
                self.thf,
                processor=procs[0],
                window=self.real_window,
                tokenizer=self.tokenizer,
                pad_token_id=self.pad_id,
            )
        ], kwargs

    def _processors_and_kwargs(self, method: Method) -> tuple[list, dict]:
        V = self.vocab_size
        filters = make_filters(method.threshold, method.value) if method.threshold != "NA" else []
        if method.dist == "ELM":
            return [processors.FilteredLogitsProcessor(filters, vocab_size=V)], {}
        if method.dist == "Temperature":
            return [TemperatureLogitsProcessor(method.T, vocab_size=V)], {}
        if method.dist == "CD":
            if self.alm is None:
                raise ValueError(f"{method.label} needs the amateur: Decoders(..., alm=family.model(family.alm)).")
            return [processors.ContrastiveLogitsProcessor(self.alm, method.T, filters, vocab_size=V)], {}
        if method.dist == "APD":
            if self.alm_prime is None:
                raise ValueError(f"{method.label} needs ALM': Decoders(..., alm_prime=pipeline.load_alm_prime(path)).")
            return [processors.APDLogitsProcessor(self.alm_prime, method.T, filters, vocab_size=V)], {}
        return [], generation.dola_generate_kwargs(self.elm, method.dola_layers)  # DoLa

    def encode(self, prompts: Sequence[str]) -> tuple[torch.Tensor, torch.Tensor]:
        """Left-padded ``(input_ids, attention_mask)``, both (B, L) int64 on the ELM's device."""
        enc = [self.tokenizer.encode(p, add_special_tokens=False) for p in prompts]
        if any(len(e) == 0 for e in enc):
            raise ValueError("a prompt encodes to no tokens; drop empty prompts.")
        L = max(map(len, enc))
        ids = torch.full((len(enc), L), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(enc), L), dtype=torch.long)
        for i, e in enumerate(enc):
            ids[i, L - len(e) :] = torch.tensor(e, dtype=torch.long)
            mask[i, L - len(e) :] = 1
        return ids.to(self.device), mask.to(self.device)
