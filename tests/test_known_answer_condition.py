"""The known-answer condition (apd.evaluation.known_answer.world_condition and the chapter's helpers):
it passes on a family built to extrapolate, fails on a flat one, and refuses bad input."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from apd.chapters import known_answer as chapter
from apd.evaluation import known_answer as ka

X = np.array(ka.PICO_X)
K = 8


def _as_world(probs, c, per_person=3):
    """A synthetic family as the world's scores: member log-probs (N, B, K), the truth (B, K), the
    candidates (every token) and one person per ``per_person`` items."""
    b = probs.shape[0]
    lp = np.log(np.clip(np.moveaxis(probs, -1, 0), 1e-12, None))
    return lp, c, np.tile(np.arange(K), (b, 1)), np.repeat(np.arange(b // per_person + 1), per_person)[:b]


@pytest.fixture(scope="module")
def extrapolating():
    """Saturating curves rising toward one-hot truths, low noise: p_ELM is still short of the truth."""
    probs, c = ka.synthetic_family(X, 30, K, "saturating", 0.002, 1, asymptote="one_hot", noise_shape="binomial")
    return _as_world(probs, c)


@pytest.fixture(scope="module")
def flat():
    """Every member equal to the expert's distribution; the truth on the expert's least likely token."""
    p = np.random.default_rng(0).dirichlet(np.ones(K), size=30)
    truth = np.eye(K)[p.argmin(-1)]
    lp = np.log(np.broadcast_to(p, (len(X), *p.shape)).copy())
    return lp, truth, np.tile(np.arange(K), (30, 1)), np.repeat(np.arange(10), 3)


@pytest.mark.parametrize("w", [0.05, 1.0])
def test_condition_passes_where_extrapolation_works(extrapolating, w):
    lp, truth, ids, people = extrapolating
    c = ka.world_condition(lp, X, truth, ids, people, w, iterations=200)
    assert c.passes and c.low > 0 and c.gain > 0 and c.ratio < 1
    assert (c.n_groups, c.n_items, c.w) == (10, 30, w)
    assert c.gain == pytest.approx(c.tv_elm - c.tv_fitter)
    assert "the condition holds" in c.reason() and "closer to" in c.reason()


def test_gain_scales_with_w_on_one_hot_truths(extrapolating):
    """Where the truth is one-hot, the total variation is linear in w: the gain at w is w times the
    gain at 1, the standard error too, so w cannot decide the condition."""
    lp, truth, ids, people = extrapolating
    p_elm, p_ap, _ = ka.wt.on_the_fly_topk(lp, X, ids, iterations=200)
    one = ka.world_condition(lp, X, truth, ids, people, 1.0, asymptotes=(p_elm, p_ap))
    tenth = ka.world_condition(lp, X, truth, ids, people, 0.1, asymptotes=(p_elm, p_ap))
    assert tenth.gain == pytest.approx(0.1 * one.gain) and tenth.se == pytest.approx(0.1 * one.se)
    assert tenth.passes == one.passes


@pytest.mark.parametrize("w", [0.05, 1.0])
def test_condition_fails_on_a_flat_family(flat, w):
    lp, truth, ids, people = flat
    c = ka.world_condition(lp, X, truth, ids, people, w, iterations=200)
    assert not c.passes and c.low <= 0
    assert abs(c.gain) < 0.01 and c.tv_elm > 0.9  # the fitter stays at p_ELM, far from the truth
    assert "the condition fails" in c.reason()


def test_interval_is_the_t_interval_over_people():
    a = np.array([0.5, 0.7, 0.4, 0.6, 0.9, 0.3, 0.8, np.nan])
    b = np.array([0.4, 0.5, 0.45, 0.5, 0.6, 0.35, 0.7, 0.1])
    g = np.array([0, 0, 1, 1, 2, 2, 3, 3])
    c = ka.paired_condition(a, b, g, w=0.5)
    d = pd.DataFrame(dict(d=a - b, g=g)).dropna().groupby("g").d.mean()
    half = sps.t.ppf(0.975, len(d) - 1) * d.std(ddof=1) / np.sqrt(len(d))
    assert c.gain == pytest.approx(d.mean()) and c.n_groups == 4 and c.n_items == 7
    assert (c.low, c.high) == pytest.approx((d.mean() - half, d.mean() + half))
    assert c.passes == (d.mean() - half > 0)


def test_total_variation_renormalises_the_truth_over_the_candidates():
    tv = ka.total_variation(np.array([[0.5, 0.5], [1.0, 0.0], [0.2, 0.8]]), np.array([[0.5, 0.0], [0, 0], [0.3, 0.3]]))
    assert tv[0] == pytest.approx(0.5) and np.isnan(tv[1]) and tv[2] == pytest.approx(0.3)


def test_bad_input_is_refused_with_the_fix(extrapolating):
    lp, truth, ids, people = extrapolating
    with pytest.raises(ValueError, match="at least 4 members"):
        ka.world_condition(lp[-3:], X[-3:], truth, ids, people, 1.0)
    with pytest.raises(ValueError, match="log_sizes must hold one x per member"):
        ka.world_condition(lp, X[1:], truth, ids, people, 1.0)
    with pytest.raises(ValueError, match="truth must be"):
        ka.world_condition(lp, X, truth[:-1], ids, people, 1.0)
    with pytest.raises(ValueError, match="ids must be"):
        ka.world_condition(lp, X, truth, ids[:-1], people, 1.0)
    with pytest.raises(ValueError, match="people must give one person per item"):
        ka.world_condition(lp, X, truth, ids, people[:-1], 1.0)
    with pytest.raises(ValueError, match="no items or no people"):
        ka.world_condition(lp, X, truth, ids, [], 1.0)
    with pytest.raises(ValueError, match="no items or no people"):
        ka.world_condition(lp[:, :0], X, truth[:0], ids[:0], people[:0], 1.0)
    with pytest.raises(ValueError, match="at least 2 people"):
        ka.world_condition(lp, X, truth, ids, np.zeros(len(people)), 1.0, iterations=20)
    with pytest.raises(ValueError, match="w must be in"):
        ka.world_condition(lp, X, truth, ids, people, 0.0)
    with pytest.raises(ValueError, match="member_logprobs must be"):
        ka.world_condition(lp[0], X, truth, ids, people, 1.0)
    with pytest.raises(ValueError, match="no mass on any item's candidates"):
        ka.world_condition(lp, X, np.zeros_like(truth), ids, people, 1.0, iterations=20)


def test_weight_on_dev_picks_the_lowest_error_and_the_smallest_on_ties():
    truth = np.array([[1.0, 0.0]] * 4)
    elm, better, worse = np.array([[0.5, 0.5]] * 4), np.array([[0.9, 0.1]] * 4), np.array([[0.1, 0.9]] * 4)
    people = [0, 0, 1, 1]
    assert ka.weight_on_dev(elm, better, truth, people) == 1.0
    assert ka.weight_on_dev(elm, worse, truth, people) == min(ka.curves.ON_THE_FLY_WEIGHTS)
    assert ka.weight_on_dev(elm, elm, truth, people, weights=(0.5, 0.2)) == 0.2


def test_truthlike_table_beats_p_elm_without_noise():
    kw = dict(
        w=0.05, seeds=[0, 1], n_positions=10, k=K, regimes=["saturating"], decays=["exponential"], iterations=200
    )
    t = ka.truthlike_table(X, [0.0], **kw)
    assert len(t) == 2 * len(ka.TRUTHLIKE) and set(t.w) == {0.05, 1.0} and (t.n == 20).all()
    assert t.beats.all() and (t.ratio < 1).all()
    pd.testing.assert_frame_equal(t, ka.truthlike_table(X, [0.0], **kw))  # deterministic


# -- the chapter's side ------------------------------------------------------------------------------

#: the results keys the verdicts read
KEYS = (
    "ka_world_gain",
    "ka_world_gain_se",
    "ka_world_n_people",
    "ka_world_ratio",
    "ka_world_w",
    "ka_condition_passes",
    "ka_condition_reason",
)


def _plain(values):
    return {k: v[0] if isinstance(v, tuple) else v for k, v in values.items()}


def test_condition_values_give_the_verdicts_keys(extrapolating, flat):
    for (lp, truth, ids, people), passes in ((extrapolating, 1), (flat, 0)):
        c = ka.world_condition(lp, X, truth, ids, people, 0.05, iterations=200)
        v = _plain(chapter.condition_values(c))
        assert set(KEYS) <= set(v) and v["ka_condition_passes"] == passes
        assert not [k for k in v if k.endswith("_source")]  # the table's row names the weight's source
        assert v["ka_world_gain"] == c.gain and v["ka_world_n_people"] == 10 and v["ka_world_w"] == 0.05
        assert v["ka_world_ratio"] == pytest.approx(c.ratio) and v["ka_condition_reason"] == c.reason()
    raw = chapter.condition_values(None, why_not="no world here")
    assert all(isinstance(v, tuple) for v in raw.values() if not isinstance(v, (str, int)))  # None only with a format
    missing = _plain(raw)
    assert set(KEYS) <= set(missing) and missing["ka_condition_passes"] is None and missing["ka_world_gain"] is None
    assert "no world here" in missing["ka_condition_reason"]


def test_world_table_and_the_weight(extrapolating):
    lp, truth, ids, people = extrapolating
    buckets = np.array(["head", "tail"] * 15)
    dq = chapter.DevQuestions(lp, truth, ids, people, buckets, X)
    settings = chapter.fitter_settings({"fly_w": 0.05, "fly_iterations": 200, "n_dev_items": 30})
    for fly in (settings, chapter.fitter_settings({"fly_w": None, "n_dev_items": 30})):  # the APD chapter's w: no say
        w, source = chapter.choose_weight(dq, fly, 200)
        assert source == chapter.W_CHOSEN_HERE and w == 1.0  # the asymptote is closer: the whole of it wins
    table, overall = chapter.world_table(dq, 0.05, 200, chapter.W_CHOSEN_HERE)
    assert set(overall) == {0.05, 1.0} and overall[0.05].passes
    assert list(table.bucket.unique()) == ["all", "head", "tail"] and len(table) == 6
    assert chapter.world_shown(table).shape == (6, 8)
    assert chapter.world_available(chapter.fitter_settings({"n_dev_items": 0}))[0] is False
