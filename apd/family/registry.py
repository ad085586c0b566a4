"""LM families as data: members, Hub ids and sizes on the x-axis.

A family is a set of causal LMs sharing one tokenizer and differing in size. The x-axis of every
curve is x = ln(non-embedding parameters) (``count_nonembedding``): all parameters minus the input
embedding and the output unembedding (tied matrices counted once). Learned position embeddings
count as non-embedding (this reproduces the release's OPT sizes); an untied unembedding counts in
Qwen1.5 only (``FamilySpec.count_untied_unembedding``), as the release's Qwen sizes imply.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from apd.base.checks import bounded, count, flag, sequence

#: The scales of the embedded pico family (:mod:`apd.family.pico`); ALM's runs use the same ones, with
#: the settings of :func:`apd.family.settings.settings_for`. ``default-200`` is the 200-person world
#: with six members (13k to 1.8M); ``exact-truth`` is the default's world with text that states only
#: the truth (no error processes) and the default's family; each is reachable as its own profile.
SCALES = ("smoke", "default", "gpu", "default-200", "exact-truth")


@dataclass(frozen=True)
class MemberSpec:
    """One member of a family.

    name: short name, also the subfolder name under ``local_dir`` (e.g. ``pythia-70m-deduped``).
    hub_id: Hugging Face Hub id (or, in a loaded ``Family``, the id or folder it was loaded from).
    n_nonembedding: non-embedding parameter count (see the module docstring), or None if unknown.
    log_size: the x-axis value, natural log of the non-embedding count (the release's number where
        it gives one), or None to use ln(n_nonembedding).
    role: "member" (used for the curves) or "reference" (the bigger LLM the QA tables compare with).
    """

    name: str
    hub_id: str | None
    n_nonembedding: int | None
    log_size: float | None
    role: str = "member"

    def __post_init__(self):
        if self.n_nonembedding is not None:  # checked, not converted
            count(f"{self.name}'s n_nonembedding", self.n_nonembedding, 1, strict=True, hint="or None if unknown")
        if self.log_size is not None:
            bounded(f"{self.name}'s log_size", self.log_size, hint="ln(non-embedding parameters), or None")
        if self.role not in ("member", "reference"):
            raise ValueError(f"{self.name}'s role must be 'member' or 'reference', got {self.role!r}.")

    @property
    def x(self) -> float | None:
        """The x-axis value: ``log_size`` if given, else ln(n_nonembedding), else None."""
        if self.log_size is not None:
            return float(self.log_size)
        return math.log(self.n_nonembedding) if self.n_nonembedding else None


@dataclass(frozen=True)
class FamilySpec:
    """A family: members ordered by size, and the reference LLM (its training settings, lambda3
    included: :func:`apd.family.settings.settings_for`).

    tokenizer_id: where the family's tokenizer can be loaded from on its own (None: from a member).
    count_untied_unembedding: whether an untied output unembedding counts as non-embedding
        parameters for this family (True only for Qwen1.5, to reproduce the release's x-axis).
    """

    name: str
    members: tuple[MemberSpec, ...]
    reference: MemberSpec | None
    tokenizer_id: str | None
    count_untied_unembedding: bool = False

    def __post_init__(self):
        for m in sequence(f"family {self.name!r}'s members", self.members, hint="a tuple of MemberSpec"):
            if not isinstance(m, MemberSpec):
                raise TypeError(f"family {self.name!r}'s members must be MemberSpec objects, got {m!r}.")
        if self.reference is not None and not isinstance(self.reference, MemberSpec):
            raise TypeError(f"family {self.name!r}'s reference must be a MemberSpec or None, got {self.reference!r}.")
        flag(f"family {self.name!r}'s count_untied_unembedding", self.count_untied_unembedding)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(m.name for m in self.members)

    def all_members(self) -> tuple[MemberSpec, ...]:
        """The members followed by the reference (if any)."""
        return self.members + ((self.reference,) if self.reference is not None else ())

    def member(self, name: str) -> MemberSpec:
        """Look a member (or the reference) up by name or Hub id; ValueError if unknown."""
        for m in self.all_members():
            if name in (m.name, m.hub_id):
                return m
        known = ", ".join(m.name for m in self.all_members()) or "(none: members live in local_dir)"
        raise ValueError(f"unknown member {name!r} of family {self.name!r}; known members: {known}.")


def _pythia(size: str, n: int, log_size: float | None, role: str = "member") -> MemberSpec:
    name = f"pythia-{size}-deduped"
    return MemberSpec(name, f"EleutherAI/{name}", n, log_size, role)


def _opt(size: str, n: int, log_size: float | None, role: str = "member") -> MemberSpec:
    return MemberSpec(f"opt-{size}", f"facebook/opt-{size}", n, log_size, role)


def _qwen(size: str, n: int, log_size: float | None, role: str = "member") -> MemberSpec:
    return MemberSpec(f"Qwen1.5-{size}", f"Qwen/Qwen1.5-{size}", n, log_size, role)


# Non-embedding counts: Pythia from the Pythia paper (Biderman et al. 2023, Table 1); OPT and
# Qwen1.5 computed with count_nonembedding on the published architectures (hidden size, layers,
# FFN size, vocabulary and position table of each config.json; see tests/test_family.py, which
# recomputes every count). Log sizes are the release's values; ln(n) agrees with each to < 5e-4.
# The reference members' log sizes are not given by the release: they are ln(n), and for OPT-13b
# and Qwen1.5-7B n is computed from the architecture (OPT-13b: hidden 5120, 40 layers, FFN 20480,
# 2050 positions; Qwen1.5-7B: hidden 4096, 32 layers, FFN 11008, untied lm_head counted).
FAMILIES: dict[str, FamilySpec] = {
    "pythia": FamilySpec(
        name="pythia",
        members=(
            _pythia("70m", 18_915_328, 16.7555),
            _pythia("160m", 85_056_000, 18.2588),
            _pythia("410m", 302_311_424, 19.5270),
            _pythia("1b", 805_736_448, 20.5073),
            _pythia("1.4b", 1_208_602_624, 20.9127),
            _pythia("2.8b", 2_517_652_480, 21.6466),
            _pythia("6.9b", 6_444_163_072, 22.5864),
        ),
        reference=_pythia("12b", 11_327_027_200, None, role="reference"),
        tokenizer_id="EleutherAI/pythia-70m-deduped",
    ),
    "opt": FamilySpec(
        name="opt",
        members=(
            _opt("125m", 86_630_400, 18.277),
            _opt("350m", 305_457_152, 19.537),
            _opt("1.3b", 1_212_801_024, 20.916),
            _opt("2.7b", 2_522_900_480, 21.649),
            _opt("6.7b", 6_452_559_872, 22.588),
        ),
        reference=_opt("13b", 12_596_080_640, None, role="reference"),
        tokenizer_id="facebook/opt-125m",
    ),
    "qwen1.5": FamilySpec(
        name="qwen1.5",
        members=(
            _qwen("0.5B", 308_405_248, 19.547),
            _qwen("1.8B", 1_525_663_744, 21.146),
            _qwen("4B", 3_561_413_120, 21.993),
        ),
        reference=_qwen("7B", 7_098_994_688, None, role="reference"),
        tokenizer_id="Qwen/Qwen1.5-0.5B",
        count_untied_unembedding=True,
    ),
    # The embedded family trained by apd.family.pretrain: members live in a local folder and are
    # counted from the models themselves.
    "pico": FamilySpec(name="pico", members=(), reference=None, tokenizer_id=None),
}


_ALIASES = {"qwen": "qwen1.5", "qwen1_5": "qwen1.5"}


def get_family_spec(name: str) -> FamilySpec:
    """The registry entry of a family (case-insensitive; "qwen" means "qwen1.5")."""
    if isinstance(name, FamilySpec):
        return name
    if not isinstance(name, str):
        raise TypeError(f"family name must be a string such as 'pythia', got {type(name).__name__}.")
    key = _ALIASES.get(name.lower(), name.lower())
    if key not in FAMILIES:
        raise ValueError(f"unknown family {name!r}; known families: {', '.join(FAMILIES)}.")
    return FAMILIES[key]


def count_nonembedding(model: torch.nn.Module, count_untied_unembedding: bool = False) -> int:
    """Non-embedding parameters of a HF causal LM: all parameters minus the vocabulary matrices.

    Subtracts the input token embedding and, unless ``count_untied_unembedding`` (or it is tied to
    the input embedding, then it was subtracted already), the output unembedding. Position
    embeddings, layer norms and biases count. Works for any model with
    ``get_input_embeddings``/``get_output_embeddings`` (GPT-NeoX, OPT, Qwen2, ...), including
    models on the meta device.
    """
    params = {id(p): p for p in model.parameters()}  # tied parameters counted once
    total = sum(p.numel() for p in params.values())
    emb_in = model.get_input_embeddings()
    if emb_in is None:
        raise TypeError(f"{type(model).__name__} has no input embedding; pass a HF causal LM.")
    n = total - emb_in.weight.numel()
    emb_out = model.get_output_embeddings()
    if emb_out is not None and emb_out.weight is not emb_in.weight and not count_untied_unembedding:
        n -= emb_out.weight.numel()
    return int(n)


def count_from_config(config, count_untied_unembedding: bool, hub_kwargs: dict):
    """(non-embedding count, total count, output rows) of a model built on the meta device."""
    from transformers import AutoModelForCausalLM

    extra = {k: hub_kwargs[k] for k in ("trust_remote_code",) if k in hub_kwargs}
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config, **extra)
    total = sum(p.numel() for p in {id(p): p for p in model.parameters()}.values())
    out = model.get_output_embeddings()
    out_rows = (out.weight if out is not None else model.get_input_embeddings().weight).shape[0]
    return count_nonembedding(model, count_untied_unembedding), int(total), int(out_rows)
