"""Batch invariance of the decoding methods on the smoke pico family.

A left-padded batch runs every model on other matrix shapes than one prompt alone, so its logits
differ from the single prompt's by float rounding (about 1e-6). No method may let that rounding decide
tokens: greedy CD, APD, APD + REAL and APD on the fly must give each prompt the same new tokens alone
and in batches of 2 and 8 prompts of different lengths, and a row's scores in the batch of 8 must
match the prompt's alone up to rounding. ALM' is the smoke family's cached ALM' (``apd.apd_model``,
the ``smoke_family`` fixture); REAL uses its cached THF model (``apd.thf_model``), not a random one.
The paper's 400-iteration on-the-fly case has ``400`` in its ids: ``-k "not 400"`` leaves it out.
"""

from dataclasses import dataclass
from typing import Callable

import pytest
import torch

import apd
from apd.core.filters import make_filters

#: world-like prompts of clearly different token lengths (2 to 41 tokens; the family trains on windows of 64)
PROMPTS = (
    "Ada was born in",
    "Konnitre Zenegon works as a lawyer. She is employed by",
    "He",
    "Bralnel Tregan attended Rusna Institute. He works as a pilot for Vesvin Group. His favourite drink is",
    "The capital city where she worked for many years is",
    "Shipegal Vinpikon earns a living as a farmer. Shipegal Vinpikon's birthplace is Kangusugon, Fisdur. "
    "Shipegal Vinpikon was born in",
    "Her brother",
    "She graduated from",
)
PAIRS = ((0, 1), (2, 5))  # the second pair: the shortest prompt (2 tokens) beside the longest (41)
ALL = tuple(range(len(PROMPTS)))
NEW_TOKENS = 5


@dataclass(frozen=True)
class Smoke:
    fam: object
    alm_prime: torch.nn.Module
    thf: torch.nn.Module


@dataclass(frozen=True)
class Method:
    name: str
    make: Callable[[Smoke], object]  # a fresh processor per generation
    fly: bool = False  # APD on the fly: scores compared as probabilities, at a looser tolerance
    atol: float = 1e-5  # on log-probabilities, or on probabilities for on the fly


def _cd(s):
    return apd.ContrastiveLogitsProcessor(
        s.fam.model(s.fam.alm), T=2.0, filters=make_filters("alpha", 0.1), vocab_size=s.fam.vocab_size
    )


def _apd(s, filters=("top-p k20", 0.8)):
    return apd.APDLogitsProcessor(s.alm_prime, T=1.0, filters=make_filters(*filters), vocab_size=s.fam.vocab_size)


def _apd_real(s):
    """APD + REAL with the paper's T_r = 4: the THF model's thresholds on the ELM mask the APD scores."""
    return apd.REALLogitsProcessor(
        s.thf, processor=_apd(s, ("REAL", 4.0)), tokenizer=s.fam.tokenizer, pad_token_id=s.fam.tokenizer.pad_token_id
    )


def _on_the_fly(iterations):
    def make(s):
        smaller = [s.fam.model(name) for name in s.fam.names[:-1]]
        return apd.OnTheFlyLogitsProcessor(
            smaller, s.fam.log_sizes, w=0.5, vocab_size=s.fam.vocab_size, iterations=iterations
        )

    return make


METHODS = [
    Method("CD", _cd),
    Method("APD", _apd),
    Method("APD+REAL", _apd_real),
    Method("APD-on-the-fly-30", _on_the_fly(30), fly=True, atol=1e-3),
    Method("APD-on-the-fly-400", _on_the_fly(400), fly=True, atol=1e-2),  # the paper's setting
]
BY_NAME = {m.name: m for m in METHODS}


@pytest.fixture(scope="module")
def smoke(smoke_family):
    fam, built, result = smoke_family
    alm_prime = apd.load_alm_prime(result, device="cpu")
    thf = apd.load_thf(apd.thf_model(fam, built, scale="smoke", progress=False), tokenizer=fam.tokenizer, device="cpu")
    return Smoke(fam, alm_prime, thf)


@pytest.fixture(scope="module")
def decode(smoke):
    """``decode(method_name, rows)``: the greedy generation of those prompts as one left-padded batch,
    as (new tokens (B, NEW_TOKENS), scores (NEW_TOKENS, B, V)); each batch is generated once per module."""
    done = {}

    def run(name, rows):
        if (name, rows) not in done:
            tok = smoke.fam.tokenizer
            enc = tok([PROMPTS[i] for i in rows], return_tensors="pt", padding=True)
            out = apd.generate(
                smoke.fam.model(smoke.fam.elm),
                enc.input_ids,
                enc.attention_mask,
                BY_NAME[name].make(smoke),
                max_new_tokens=NEW_TOKENS,
                do_sample=False,
                pad_token_id=tok.pad_token_id,
                eos_token_id=None,  # no row ends early: every generation has NEW_TOKENS new tokens
                output_scores=True,
                return_dict_in_generate=True,
            )
            new = out.sequences[:, enc.input_ids.shape[1] :]
            assert new.shape == (len(rows), NEW_TOKENS)
            done[name, rows] = new, torch.stack(out.scores).float()
        return done[name, rows]

    return run


def _mismatches(decode, name, rows):
    """Each row of the batch whose new tokens differ from its prompt's alone: (prompt, step, batch, alone)."""
    batch, _ = decode(name, rows)
    bad = []
    for row, i in enumerate(rows):
        alone = decode(name, (i,))[0][0]
        if not torch.equal(batch[row], alone):
            step = int((batch[row] != alone).nonzero()[0])
            bad.append((i, step, batch[row].tolist(), alone.tolist()))
    return bad


def _shared_steps(a, b):
    """The steps whose contexts agree: up to and including the first differing new token."""
    diff = (a != b).nonzero()
    return NEW_TOKENS if len(diff) == 0 else int(diff[0]) + 1


def test_prompts_differ_in_length_and_are_padded_on_the_left(smoke):
    assert smoke.fam.tokenizer.padding_side == "left"
    lengths = [len(smoke.fam.tokenizer(p).input_ids) for p in PROMPTS]
    assert len(set(lengths)) == len(PROMPTS) and min(lengths) <= 2 and max(lengths) + NEW_TOKENS <= 64, lengths
    for a, b in PAIRS:
        assert lengths[a] != lengths[b]


@pytest.mark.parametrize("rows", [*PAIRS, ALL], ids=["pair-0-1", "pair-2-5", "batch-of-8"])
@pytest.mark.parametrize("name", [m.name for m in METHODS])
def test_batched_tokens_equal_each_prompt_alone(decode, name, rows):
    bad = _mismatches(decode, name, rows)
    assert not bad, f"{name}: rows differing from the prompt alone (prompt, first step, batched, alone): {bad}"


@pytest.mark.parametrize("name", [m.name for m in METHODS])
def test_scores_in_a_batch_of_eight_equal_each_prompt_alone(decode, name):
    """The processors' scores of every row, at the steps whose contexts agree, against the prompt alone:
    the same -inf pattern, finite log-probabilities within 1e-5 (probabilities within the method's
    tolerance for on the fly, whose curve fit amplifies rounding); the measured maximum is printed."""
    method = BY_NAME[name]
    batch_new, batch_scores = decode(name, ALL)
    worst = 0.0
    for row in ALL:
        alone_new, alone_scores = decode(name, (row,))
        steps = _shared_steps(batch_new[row], alone_new[0])
        got, want = batch_scores[:steps, row], alone_scores[:steps, 0]
        assert torch.equal(torch.isfinite(got), torch.isfinite(want)), f"{name}: prompt {row} keeps other tokens"
        finite = torch.isfinite(want)
        if method.fly:
            got, want = got.exp(), want.exp()
        worst = max(worst, float((got[finite] - want[finite]).abs().max()))
    what = "probabilities" if method.fly else "log-probabilities"
    print(f"{name}: max |batch of 8 - alone| on {what} = {worst:.3g}")
    assert worst <= method.atol, f"{name}: scores differ by {worst:.3g} > {method.atol:g} on {what}"
