"""apd.evaluation.qa_metrics against hand-computed cases."""

import math

import numpy as np
import pytest
import scipy.stats
import torch

from apd.evaluation import qa_metrics, text_metrics

# ----------------------------------------------------------------------------------------------
# tokenisation


def test_word_tokenize_splits_punctuation_and_contractions_like_treebank():
    assert text_metrics.word_tokenize("The U.S. Army isn't here; it's 3.5 km away...") == [
        "The",
        "U.S.",
        "Army",
        "is",
        "n't",
        "here",
        ";",
        "it",
        "'s",
        "3.5",
        "km",
        "away",
        "...",
    ]
    assert text_metrics.word_tokenize('A well-known "quote".') == ["A", "well-known", '"', "quote", '"', "."]


def test_split_sentences_keeps_abbreviations_and_initials():
    text = "Mr. Smith went to Washington. He was born in 1950! Was he? J. R. R. Tolkien wrote it."
    assert text_metrics.split_sentences(text) == [
        "Mr. Smith went to Washington.",
        "He was born in 1950!",
        "Was he?",
        "J. R. R. Tolkien wrote it.",
    ]
    assert text_metrics.first_sentences(text, 2) == "Mr. Smith went to Washington. He was born in 1950!"
    assert text_metrics.first_sentences(text, None) == text
    with pytest.raises(ValueError, match="max_sentences"):
        text_metrics.first_sentences(text, 0)


# ----------------------------------------------------------------------------------------------
# Dist-n


def test_distinct_2_hand_computed_whitespace():
    # bigrams: ab ba ab | ab bc -> 5 in all, 3 distinct
    assert text_metrics.distinct_n(["a b a b", "a b c"], 2, tokenize=str.split, max_sentences=None) == pytest.approx(
        3 / 5
    )


def test_distinct_2_never_counts_bigrams_across_continuations():
    # (a,b) and (b,a); joining the two would add (b,b)
    assert text_metrics.distinct_n(["a b", "b a"], tokenize=str.split, max_sentences=None) == 1.0
    assert text_metrics.distinct_n(["a b", "b a", "b b"], tokenize=str.split, max_sentences=None) == 1.0


def test_distinct_2_default_tokenizer_and_sentence_cut():
    text = "Hello, world. Hello, world."
    # tokens: Hello , world . Hello , world .  -> 7 bigrams, 4 distinct
    assert text_metrics.distinct_n([text], max_sentences=None) == pytest.approx(4 / 7)
    # only the first sentence: Hello , world . -> 3 bigrams, all distinct
    assert text_metrics.distinct_n([text], max_sentences=1) == 1.0


def test_distinct_n_pretokenised_and_per_prompt():
    assert text_metrics.distinct_n([[1, 2, 1, 2]]) == pytest.approx(2 / 3)
    assert text_metrics.distinct_n([[1, 2, 1, 2]], n=1) == pytest.approx(2 / 4)
    groups = [["a b a b"], ["a b c"]]  # 2/3 and 2/2
    assert text_metrics.distinct_n_per_prompt(groups, tokenize=str.split, max_sentences=None) == pytest.approx(
        (2 / 3 + 1) / 2
    )


def test_distinct_n_bad_input():
    with pytest.raises(ValueError, match="undefined"):
        text_metrics.distinct_n(["", "word"])
    with pytest.raises(TypeError, match="wrap it"):
        text_metrics.distinct_n("a b c")
    with pytest.raises(ValueError, match="positive int"):
        text_metrics.distinct_n(["a b"], n=0)


# ----------------------------------------------------------------------------------------------
# Rep


@pytest.mark.parametrize(
    "seq, expected_suffix, repetitive",
    [
        ("abcabc", (3, 2), True),  # a 3-gram repeated twice
        ("xyzaa", (1, 2), False),  # only a 1-gram repeats
        ("ab" * 30, (2, 30), False),  # short n-grams need > 50 repeats
        ("ab" * 60, (2, 60), True),
        ("a" * 50, (1, 50), False),
        ("a" * 51, (1, 51), True),
        ("x the cat. the cat.", (9, 2), True),
        ("hello world", (1, 1), False),
        ("", (1, 0), False),
        (["a", "b", "c", "a", "b", "c"], (3, 2), True),
        ([7, 8, 8], (1, 2), False),
    ],
)
def test_repetition_rule_hand_cases(seq, expected_suffix, repetitive):
    assert text_metrics.repeated_suffix(seq) == expected_suffix
    assert text_metrics.ends_in_repetition(seq) is repetitive


def test_repetition_judges_only_the_most_repeated_suffix():
    # "aaa" repeats twice at the end, but "a" (6 times) is the most repeated suffix: n=1 < 3
    assert text_metrics.repeated_suffix("xyaaaaaa") == (1, 6)
    assert not text_metrics.ends_in_repetition("xyaaaaaa")


def test_repetition_ratio_units_and_empty_continuations():
    conts = ["abcabc", "hello world", "", "x the cat. the cat."]
    assert text_metrics.repetition_ratio(conts) == 0.5  # empty counts in the denominator
    # character units (the release) vs word units
    assert text_metrics.repetition_ratio(["x y z x y z"]) == 0.0
    assert text_metrics.repetition_ratio(["x y z x y z"], tokenize=str.split) == 1.0
    with pytest.raises(TypeError, match="wrap it"):
        text_metrics.repetition_ratio("abcabc")


# ----------------------------------------------------------------------------------------------
# NE_ER and Entail_R


def test_ne_error_rate_shared_allowed_set():
    ents = [["Paris", "France"], ["Obama"], []]
    # unit 1: France missing -> 1/2; unit 2: "Obama" matches "the obama" -> 0; unit 3 skipped
    assert text_metrics.ne_error_rate(ents, {"paris", "The  Obama"}) == pytest.approx(0.25)


def test_ne_error_rate_per_unit_evidence_text():
    ents = [["Paris", "Germany"], ["Obama", "Biden"]]
    evidence = ["Paris is the capital of France.", "Barack Obama was the 44th president."]
    assert text_metrics.ne_error_rate(ents, allowed_per_unit=evidence) == pytest.approx(0.5)


def test_ne_error_rate_undefined_and_bad_input():
    assert math.isnan(text_metrics.ne_error_rate([[], []], {"x"}))
    with pytest.raises(TypeError, match="exactly one"):
        text_metrics.ne_error_rate([["a"]])
    with pytest.raises(ValueError, match="one allowed set"):
        text_metrics.ne_error_rate([["a"], ["b"]], allowed_per_unit=[{"a"}])
    with pytest.raises(TypeError, match="wrap it"):
        text_metrics.ne_error_rate(["Paris"], {"paris"})


def test_entailment_ratio():
    assert text_metrics.entailment_ratio([True, False, None, True]) == pytest.approx(2 / 3)
    with pytest.raises(ValueError, match="check-worthy"):
        text_metrics.entailment_ratio([None, None])


# ----------------------------------------------------------------------------------------------
# QA: CD over the top k

P_ELM = np.array([0.5, 0.3, 0.15, 0.05])
P_ALM = np.array([0.4, 0.1, 0.25, 0.25])


def test_cd_over_topk_hand_computed():
    out = qa_metrics.cd_scores_over_topk(np.log(P_ELM), np.log(P_ALM), inv_T=0.5, k=3)
    # kept: tokens 0, 1, 2; score = p_ELM / sqrt(p_ALM), renormalised over the three
    expected = np.array([0.5 / math.sqrt(0.4), 0.3 / math.sqrt(0.1), 0.15 / math.sqrt(0.25), 0.0])
    expected /= expected.sum()
    np.testing.assert_allclose(np.exp(out), expected, atol=1e-12)
    np.testing.assert_allclose(np.exp(out), [0.38767604, 0.46521125, 0.14711271, 0.0], atol=1e-8)
    assert out[3] == -math.inf


def test_cd_over_topk_accepts_logits_and_inv_T_zero_is_the_elm():
    a = qa_metrics.cd_scores_over_topk(np.log(P_ELM) + 3.7, np.log(P_ALM) - 1.2, inv_T=0.5, k=3)
    b = qa_metrics.cd_scores_over_topk(np.log(P_ELM), np.log(P_ALM), inv_T=0.5, k=3)
    np.testing.assert_allclose(a, b, atol=1e-12)
    elm = qa_metrics.cd_scores_over_topk(np.log(P_ELM), np.log(P_ALM), inv_T=0.0, k=3)
    np.testing.assert_allclose(np.exp(elm), [0.5 / 0.95, 0.3 / 0.95, 0.15 / 0.95, 0.0], atol=1e-12)


def test_cd_over_topk_inv_T_grid_batches_and_torch():
    grid = [0.0, 0.5, 1.0]
    out = qa_metrics.cd_scores_over_topk(np.log(P_ELM), np.log(P_ALM), grid, k=3)
    assert out.shape == (3, 4)
    for i, inv in enumerate(grid):
        np.testing.assert_allclose(out[i], qa_metrics.cd_scores_over_topk(np.log(P_ELM), np.log(P_ALM), inv, k=3))
    g = torch.Generator().manual_seed(0)
    e, a = torch.randn(2, 5, 50, generator=g), torch.randn(2, 5, 50, generator=g)
    t = qa_metrics.cd_scores_over_topk(e, a, 0.5)
    assert isinstance(t, torch.Tensor) and t.shape == (2, 5, 50)
    torch.testing.assert_close(t.exp().sum(-1), torch.ones(2, 5))
    assert (torch.isfinite(t).sum(-1) == 20).all()
    half = qa_metrics.cd_scores_over_topk(e.half(), a.half(), 0.5)  # fp16 models are scored in fp32
    assert half.dtype == torch.float32
    torch.testing.assert_close(half, t, atol=2e-3, rtol=0)


def test_cd_shows_obvious_blindness():
    # the amateur also likes the obvious token 0, so CD (T=1) prefers the rare token 1
    p_elm, p_alm = np.array([0.6, 0.3, 0.1]), np.array([0.7, 0.05, 0.25])
    assert np.argmax(qa_metrics.cd_scores_over_topk(np.log(p_elm), np.log(p_alm), 1.0, k=3)) == 1
    assert np.argmax(qa_metrics.cd_scores_over_topk(np.log(p_elm), np.log(p_alm), 0.0, k=3)) == 0  # the ELM alone


def test_cd_over_topk_bad_input():
    with pytest.raises(ValueError, match="differ in shape"):
        qa_metrics.cd_scores_over_topk(np.zeros(5), np.zeros(4), 0.5, k=2)
    with pytest.raises(ValueError, match=">= 0"):
        qa_metrics.cd_scores_over_topk(np.zeros(4), np.zeros(4), -0.5, k=2)
    with pytest.raises(ValueError, match="NaN"):
        qa_metrics.cd_scores_over_topk(np.array([0.0, np.nan, 1, 2]), np.zeros(4), 0.5, k=2)
    with pytest.raises(ValueError, match="finite"):
        qa_metrics.cd_scores_over_topk(np.log(P_ELM), np.array([-0.7, -np.inf, -1.4, -1.4]), 0.5, k=3)


def test_gold_rank_ties_count_against_the_gold_token():
    s = np.array([0.1, 0.5, 0.3, 0.3])
    assert qa_metrics.gold_rank(s, np.array(1)) == 1
    assert qa_metrics.gold_rank(s, np.array(2)) == 3
    masked = qa_metrics.cd_scores_over_topk(np.log(P_ELM), np.log(P_ALM), 0.5, k=2)
    assert qa_metrics.gold_rank(masked, np.array(3)) == 4  # outside the top k: rank = vocab size
    batch = qa_metrics.gold_rank(torch.log(torch.tensor([[0.5, 0.3, 0.2], [0.1, 0.2, 0.7]])), torch.tensor([2, 2]))
    assert batch.tolist() == [3, 1]
    with pytest.raises(ValueError, match="leading shape"):
        qa_metrics.gold_rank(s, np.array([1, 2]))


# ----------------------------------------------------------------------------------------------
# QA: ppl, accuracy, MRR, filters


def test_answer_ppl_adds_0_01_and_is_not_exponentiated():
    assert qa_metrics.answer_ppl(np.array([0.5, 0.2])) == pytest.approx(-(math.log(0.51) + math.log(0.21)) / 2)
    assert qa_metrics.answer_ppl(np.array([0.5, 0.2])) == pytest.approx(1.116996150764217)
    assert qa_metrics.answer_ppl(np.array([0.0])) == pytest.approx(4.605170185988091)  # finite at p = 0
    assert qa_metrics.answer_ppl(np.array([1.0])) == pytest.approx(-0.009950330853168092)  # can go below 0
    np.testing.assert_allclose(qa_metrics.answer_ppl([[0.5, 0.2], [0.1]]), [1.116996150764217, -math.log(0.11)])
    np.testing.assert_allclose(
        qa_metrics.answer_ppl(np.array([[0.5, 0.2], [0.1, 0.1]])), [1.116996150764217, -math.log(0.11)]
    )
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        qa_metrics.answer_ppl(np.array([1.5]))


def test_accuracy_lowest_ppl_with_filtered_options_and_ties():
    ppl = np.array([[1.0, 2.0, 3.0], [2.0, 1.0, np.nan], [1.5, 1.5, np.nan]])
    gold = np.array([0, 0, 0])
    assert qa_metrics.accuracy_lowest_ppl(ppl, gold) == pytest.approx(2 / 3)
    assert qa_metrics.accuracy_lowest_ppl(ppl, gold, return_per_question=True).tolist() == [True, False, True]
    assert qa_metrics.accuracy_lowest_ppl(ppl, np.array([2, 1, 1])) == pytest.approx(2 / 3)
    with pytest.raises(ValueError, match="gold option"):
        qa_metrics.accuracy_lowest_ppl(np.array([[np.nan, 1.0]]), np.array([0]))
    with pytest.raises(ValueError, match="distractor"):
        qa_metrics.accuracy_lowest_ppl(np.array([[1.0, np.nan]]), np.array([0]))


def test_mrr_hand_computed():
    assert qa_metrics.mrr(np.array([1, 2, 4])) == pytest.approx((1 + 0.5 + 0.25) / 3)
    assert qa_metrics.mrr([np.array([1, 2]), np.array([4])]) == pytest.approx(((1 + 0.5) / 2 + 0.25) / 2)
    assert qa_metrics.mrr(torch.tensor([1, 1])) == 1.0
    with pytest.raises(ValueError, match="1-based"):
        qa_metrics.mrr(np.array([0, 1]))


def test_in_topk_filter_elm_and_reference():
    elm = [np.array([1, 3]), np.array([2, 25]), np.array([20])]
    ref = [np.array([1, 1]), np.array([1, 1]), np.array([21])]
    assert qa_metrics.in_topk_filter(elm, k=20).tolist() == [True, False, True]
    assert qa_metrics.in_topk_filter(elm, ref, k=20).tolist() == [True, False, False]
    assert qa_metrics.in_topk_filter(np.array([[1, 2], [3, 30]]), k=20).tolist() == [True, False]
    assert qa_metrics.in_topk_filter(np.array([3, 21]), k=20).tolist() == [True, False]  # one-token answers
    with pytest.raises(ValueError, match="same answers"):
        qa_metrics.in_topk_filter(elm, ref[:2])


def test_keep_multiple_choice_needs_gold_and_a_distractor():
    kept = np.array([[True, True, False], [True, False, False], [False, True, True]])
    assert qa_metrics.keep_multiple_choice(kept, np.array([0, 0, 0])).tolist() == [True, False, False]
    assert qa_metrics.keep_multiple_choice(kept, np.array([1, 0, 2])).tolist() == [True, False, True]


# ----------------------------------------------------------------------------------------------
# significance and gap closure


def test_ttest_matches_scipy_directly():
    a, b = [1.0, 2.0, 3.0], [4.0, 5.0, 6.0]
    r = qa_metrics.ttest_per_question(a, b)
    assert r.statistic == pytest.approx(-3 / math.sqrt(2 / 3))  # pooled variance 1, n = 3 each
    rng = np.random.default_rng(0)
    x, y = rng.normal(2.0, 1.0, 200), rng.normal(2.2, 1.3, 150)
    direct = scipy.stats.ttest_ind(x, y)
    ours = qa_metrics.ttest_per_question(x, y)  # ddof=1
    assert ours.statistic == pytest.approx(direct.statistic, rel=1e-12)
    assert ours.pvalue == pytest.approx(direct.pvalue, rel=1e-10)
    release = qa_metrics.ttest_per_question(x, y, ddof=0)  # the release passed np.std
    expect = scipy.stats.ttest_ind_from_stats(x.mean(), x.std(), 200, y.mean(), y.std(), 150)
    assert release.pvalue == pytest.approx(expect.pvalue, rel=1e-12)
    assert release.pvalue != pytest.approx(direct.pvalue, rel=1e-6)
    welch = qa_metrics.ttest_per_question(x, y, equal_var=False)
    assert welch.pvalue == pytest.approx(scipy.stats.ttest_ind(x, y, equal_var=False).pvalue, rel=1e-10)
    with pytest.raises(ValueError, match="at least 2"):
        qa_metrics.ttest_from_stats(1.0, 1.0, 1, 2.0, 1.0, 5)


def test_gap_closure_hand_computed_and_na():
    # Table 2, LAMBADA ppl: (APD - CD) / (LLM 12B - LLM 6.9B)
    assert qa_metrics.gap_closure(2.132, 2.237, 2.188, 2.264) == pytest.approx(-0.105 / -0.076)
    # accuracy, higher is better: (0.685 - 0.671) / (0.660 - 0.658) = 7
    assert qa_metrics.gap_closure(0.685, 0.671, 0.660, 0.658, higher_is_better=True) == pytest.approx(7.0)
    # QASC (Q+Fact) acc: the 12B model is worse -> "NA"
    assert math.isnan(qa_metrics.gap_closure(0.874, 0.862, 0.845, 0.856, higher_is_better=True))
    assert math.isnan(qa_metrics.gap_closure(1.0, 2.0, 3.0, 3.0))
    out = qa_metrics.gap_closure(np.array([1.0, 2.0]), 0.0, np.array([2.0, 4.0]), 0.0)
    np.testing.assert_allclose(out, [0.5, 0.5])
