"""What a profile may say: its YAML read with duplicate keys refused, its shape, and the range of
every notebook parameter's value.

A profile is ``{description: <text>, notebooks: {<stem>: {<parameter>: <value>}}}``. The parameter
names and the types of their values come from each notebook's ``parameters`` cell (the defaults);
their ranges are declared here, in :data:`RANGES`, one line per parameter name (a ``"stem.name"``
entry overrides the name's rule for one notebook). Every parameter of every notebook has a rule
(``tests/test_reliability_runner.py`` checks it), so a new parameter is declared here beside the
others. A ``None`` value is left to the type check (it is allowed only where the default is None).

Example:
    >>> check_value("theorem1", "n_draws", -5)
    'theorem1.n_draws = -5: expected an integer >= 1'
    >>> check_value("family", "device", "cuda:0") is None
    True
"""

from __future__ import annotations

import difflib
import math
import re
from dataclasses import dataclass
from typing import Any, Callable

import yaml

#: Top-level keys of a profile and what each holds.
TOP_KEYS = {
    "description": "one line saying what the profile is for",
    "notebooks": "a mapping {notebook: {parameter: value}}",
}

#: Known values, copied here so that validation needs no torch; tests compare them with their
#: sources (apd.family.registry.SCALES, apd.family.registry.FAMILIES, apd.evaluation.known_answer.SIZES).
PICO_SCALES = ("smoke", "default", "gpu", "default-200")
FAMILIES = ("pico", "pythia", "opt", "qwen1.5", "qwen")
KNOWN_ANSWER_SIZES = ("smoke", "default", "full")
DEVICE = re.compile(r"^(auto|cpu|mps|cuda(:\d+)?)$")


class ProfileShapeError(ValueError):
    """The profile's YAML has a duplicate key (the message names it and its line)."""


# -- YAML with duplicate keys refused ------------------------------------------------------------


class UniqueKeyLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that refuses a key given twice in one mapping (plain YAML keeps the last)."""

    def construct_mapping(self, node, deep=False):
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            if key in seen:
                raise ProfileShapeError(
                    f"key {key!r} is given twice in one mapping (lines {seen[key]} and {line}); "
                    "YAML would silently keep the last: keep one"
                )
            seen[key] = line
        return super().construct_mapping(node, deep=deep)


def load_yaml(text: str) -> Any:
    """Parse YAML text like ``yaml.safe_load``, but a duplicate key raises ProfileShapeError."""
    return yaml.load(text, Loader=UniqueKeyLoader)


# -- shape ---------------------------------------------------------------------------------------


def _did_you_mean(word: str, known) -> str:
    close = difflib.get_close_matches(str(word), list(known), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def shape_problems(data: Any) -> list[str]:
    """Problems with the profile's shape: a mapping with only :data:`TOP_KEYS`, ``notebooks`` a
    mapping of notebook names to mappings (or empty). Values are not looked at here."""
    if data is None:
        return ["the file is empty: it needs `notebooks:` with one entry per chapter"]
    if not isinstance(data, dict):
        return [
            f"the file holds {type(data).__name__} {_short(data)}, but a profile is a mapping "
            "with `description:` and `notebooks:`"
        ]
    problems = []
    for key in data:
        if key not in TOP_KEYS:
            problems.append(
                f"unknown top-level key {key!r}{_did_you_mean(key, TOP_KEYS)}: a profile has only "
                + ", ".join(f"`{k}:` ({v})" for k, v in TOP_KEYS.items())
                + "; notebook parameters go under `notebooks: {<notebook>: {...}}`"
            )
    if "description" in data and not isinstance(data["description"], str):
        problems.append(f"description: expected one line of text, got {_short(data['description'])}")
    notebooks = data.get("notebooks")
    if "notebooks" not in data:
        if not any("notebooks" in p for p in problems):
            problems.append("no `notebooks:` key: add `notebooks:` with one entry per chapter")
    elif not isinstance(notebooks, dict):
        problems.append(
            f"notebooks: expected a mapping {{<notebook>: {{<parameter>: <value>}}}}, got "
            f"{type(notebooks).__name__} {_short(notebooks)}"
            + ("; write `theorem1: {}` rather than `- theorem1`" if isinstance(notebooks, list) else "")
        )
    else:
        for stem, params in notebooks.items():
            if params is not None and not isinstance(params, dict):
                problems.append(
                    f"notebooks.{stem}: expected a mapping of parameters such as "
                    f"`{stem}: {{seed: 1}}` (or `{stem}: {{}}`), got {type(params).__name__} {_short(params)}"
                )
    return problems


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


# -- ranges --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Rule:
    """A value's allowed range: ``words`` says it (after "expected"), ``ok`` tests a value."""

    words: str
    ok: Callable[[Any], bool]


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_num(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def at_least(n: int) -> Rule:
    return Rule(f"an integer >= {n}", lambda v: _is_int(v) and v >= n)


def number(
    low: float | None = None, high: float | None = None, low_open: bool = True, high_open: bool = False
) -> Rule:
    """A finite number in the interval ``(low, high]`` by default (the openness is adjustable)."""
    lo = "(" if low_open else "["
    hi = ")" if high_open else "]"
    words = (
        "a finite number"
        if low is None and high is None
        else f"a number > {low}"
        if high is None and low_open
        else f"a number >= {low}"
        if high is None
        else f"a number in {lo}{low}, {high}{hi}"
    )

    def ok(v):
        if not _is_num(v):
            return False
        if low is not None and (v <= low if low_open else v < low):
            return False
        return high is None or (v < high if high_open else v <= high)

    return Rule(words, ok)


def one_of(*choices: str, lower: bool = False) -> Rule:
    return Rule(
        "one of " + ", ".join(choices), lambda v: isinstance(v, str) and (v.lower() if lower else v) in choices
    )


def list_of(rule: Rule, nonempty: bool = True) -> Rule:
    return Rule(
        f"a {'non-empty ' if nonempty else ''}list, each {rule.words}",
        lambda v: isinstance(v, (list, tuple)) and (len(v) > 0 or not nonempty) and all(rule.ok(x) for x in v),
    )


ANY = Rule("anything", lambda v: True)
TEXT = Rule("a string", lambda v: isinstance(v, str))
NAME = Rule("a non-empty string", lambda v: isinstance(v, str) and v.strip() != "")
FLAG = Rule("true or false", lambda v: isinstance(v, bool))
COUNT = at_least(1)
COUNT0 = at_least(0)  # 0 skips a section
SEED = at_least(0)
POSITIVE = number(0)
NONNEG = number(0, low_open=False)
PROBABILITY = number(0, 1)  # (0, 1]
DEVICE_RULE = Rule("auto, cpu, mps, cuda or cuda:N", lambda v: isinstance(v, str) and bool(DEVICE.match(v)))

#: The range of every notebook parameter, by name; ``"stem.name"`` overrides a name for one notebook.
RANGES: dict[str, Rule] = {
    # every notebook
    "profile": NAME,
    "seed": SEED,
    "split_seed": SEED,
    "family": one_of(*FAMILIES, lower=True),
    "pico_scale": one_of(*PICO_SCALES),
    "device": DEVICE_RULE,
    "members": list_of(NAME),
    "local_dir": NAME,
    "data_dir": NAME,
    "alm_prime_path": NAME,
    "thf_path": NAME,
    "kilt_path": NAME,
    "load_kwargs": ANY,
    "top_k": COUNT,
    "batch_size": COUNT,
    "max_new_tokens": COUNT,
    "qa_items_per_bucket": COUNT,
    "alpha": PROBABILITY,
    # theorem1
    "n_draws": COUNT,
    "vocab_size": at_least(2),
    "T_grid": list_of(number(1)),  # amateur temperatures, T > 1
    "alm_log_size": POSITIVE,
    "elm_log_size": POSITIVE,
    "curvature_grid": list_of(NONNEG),
    # family
    "heldout_tokens": COUNT,
    # apd
    "inv_T_grid": list_of(POSITIVE),
    "fly": FLAG,
    "n_text_positions": COUNT,
    "text_seq_len": at_least(2),
    "n_curve_examples": COUNT0,
    "fly_iterations": COUNT,
    "fitter_noise": NONNEG,
    # known_answer
    "size": one_of(*KNOWN_ANSWER_SIZES),
    "noise": NONNEG,
    "noise_free_check": FLAG,
    "family_noise": FLAG,
    "condition_seeds": list_of(SEED),
    "condition_positions": COUNT,
    # testbed
    "current_controls": FLAG,
    "ne_er": FLAG,
    "fit_iterations": COUNT,
    "table_path": NAME,
    # curves
    "prompt": TEXT,
    "T_values": list_of(POSITIVE),
    "max_panels": COUNT,
    "blind_T_grid": list_of(POSITIVE),
    "qa_dataset": NAME,
    "qa_limit": COUNT,
    "n_positions": COUNT,
    "curve_top_k": COUNT,
    "hlm_positions": COUNT,
    "hlm_elm": Rule("an integer (a member's index; -1: the middle member)", _is_int),
    "hlm_T_grid": list_of(POSITIVE),
    # qa
    "use_reference": FLAG,
    "max_length": at_least(2),
    "qa_datasets": list_of(NAME),
    "stand_ins": ANY,
    # real
    "window": COUNT,
    "T_r": POSITIVE,
    "heldout_docs": COUNT,
    # factuality
    "cpu_threads": COUNT,
    "world_n_prompts": COUNT0,
    "seeds": list_of(SEED),
    "verdict_seeds": COUNT0,
    "p_grid": list_of(PROBABILITY),
    "temperatures": list_of(POSITIVE),
    "cd_T": POSITIVE,
    "cd_T_grid": list_of(POSITIVE),
    "cd_alpha_T_grid": list_of(POSITIVE),
    "apd_T": POSITIVE,
    "table_ps": list_of(PROBABILITY),
    "real_T_r_grid": list_of(POSITIVE, nonempty=False),
    "real_T_r": POSITIVE,
    "real_verdict_seeds": COUNT0,
    "dola_layers": list_of(one_of("low", "high")),
    "fp_kinds": list_of(one_of("factual", "nonfactual")),
    "fp_split": one_of("test", "validation", "all"),
    "fp_n_prompts": COUNT0,
    "fp_methods": one_of("table1", "all"),
    "fp_seeds": list_of(SEED),
    "fp_max_new_tokens": COUNT,
    "fp_covered_only": FLAG,
    "evidence": one_of("kilt", "wiki", "auto"),
    "nli_model": NAME,
    "run_nli": FLAG,
    # ablations
    "ablation_names": list_of(NAME),
    "epochs": COUNT,
    "data_fraction": PROBABILITY,
    "val_chunks": COUNT0,
    "z": POSITIVE,
    "min_effect": NONNEG,
    # paper_vs_book
    "paper_family": NAME,
    # tutorial
    "prompts": list_of(TEXT),
    "top_p": PROBABILITY,
}


def rule_for(stem: str, name: str) -> Rule | None:
    """The range rule of parameter ``name`` of notebook ``stem`` (None: not declared)."""
    return RANGES.get(f"{stem}.{name}", RANGES.get(name))


def check_value(stem: str, name: str, value: Any) -> str | None:
    """None if ``value`` is in the range of ``stem.name`` (or is None, or has no rule), else one
    line naming the key, the value and the range."""
    rule = rule_for(stem, name)
    if value is None or rule is None or rule.ok(value):
        return None
    return f"{stem}.{name} = {_short(value)}: expected {rule.words}"
