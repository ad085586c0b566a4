"""apd.amateur.gates: the mechanism gates of a trained ALM'."""

import doctest
import math

import pytest
import torch

from apd.amateur import gates
from apd.amateur.gates import THRESHOLDS, Gates
from apd.amateur.objective import asymptote
from apd.core import curves
from apd.evaluation.known_answer import PICO_X

# the objective at four solutions where the trained ALM' closes 0.6 of the gap (trivial 1.0, attainable 0.5)
ROWS = dict(loss_trained=0.7, loss_attainable=0.5, loss_expert=1.0, loss_cd=1.3)


def make(**kw):
    base = dict(
        curve_alive=0.8,
        l1_curve=0.01,
        l1_flat=0.02,
        collapsed=0.3,
        collapsed_cd=0.25,
        moved_kl=0.05,
        toward_expert=0.4,
        n_positions=10,
        n_tokens=200,
        **ROWS,
    )
    return Gates(**{**base, **kw})


def test_every_gate_and_its_reason():
    assert make().engaged and make().reason == "" and make().gap_share == pytest.approx(0.6)
    inert = make(curve_alive=0.01)
    assert not inert.engaged and inert.reason == "curve model inert"
    assert make(l1_curve=0.03).reason == "curve model inert"  # alive but no better than a flat line
    trivial = make(loss_trained=0.9)  # a fifth of the gap
    assert trivial.reason == gates.NEAR_TRIVIAL and not trivial.on_expert
    assert make(loss_trained=0.9, toward_expert=0.8).on_expert  # and nearer the expert than CD
    assert make(collapsed=0.9).not_trivial  # the share at the expert is context, not the gate
    assert make(loss_attainable=1.0).reason == gates.NO_GAIN and math.isnan(make(loss_attainable=1.1).gap_share)
    assert make(loss_trained=math.nan).reason == gates.NOT_MEASURED
    assert make(moved_kl=1e-5).reason == "ALM' did not move from the ALM"
    both = make(curve_alive=0.0, loss_trained=1.0).to_dict()
    assert both["reason"] == f"curve model inert; {gates.NEAR_TRIVIAL}" and both["engaged"] is False
    assert both["threshold_alive_min"] == THRESHOLDS.alive_min and both["gap_share"] == 0.0
    with pytest.raises(ValueError, match="gap_min"):
        gates.Thresholds(gap_min=1.5)


# -- the measurement on a synthetic family whose curves have known asymptotes ---------------------------


@pytest.fixture(scope="module")
def synthetic():
    """Token pairs (p, 1 - p) over pico's sizes, p a noiseless decay curve with a known asymptote;
    the ELM's and the ALM's logits are the largest and the smallest member's log-probabilities."""
    probs, _ = curves.synthetic_curves(300, PICO_X, noise=0.0, seed=3)
    p = torch.stack([probs, 1 - probs], 1).clamp(1e-4, 1 - 1e-4)  # (P, K=2, N)
    lp = p.log().permute(2, 0, 1)  # (N, P, K)
    elm, alm = lp[-1], lp[0]
    return lp, elm, alm, gates.attainable_solution(lp, elm, alm, PICO_X)


def read(synthetic, trained, lambda3=0.01):
    lp, elm, alm, best = synthetic
    return gates.gates_at(lp, elm, alm, trained, best, lambda2=10.0, lambda3=lambda3)


def test_not_trivial_passes_at_the_attainable_solution_and_fails_at_the_trivial_ones(synthetic):
    lp, elm, alm, best = synthetic
    at_best = read(synthetic, best)
    assert at_best.gap_share == pytest.approx(1.0) and at_best.not_trivial
    assert at_best.loss_attainable < min(at_best.loss_expert, at_best.loss_cd)  # a gain to attain
    for trivial in (gates.expert_solution(lp, elm, alm), gates.cd_solution(lp, elm, alm)):
        g = read(synthetic, trivial)
        assert g.gap_share <= 1e-9 and not g.not_trivial and gates.NEAR_TRIVIAL in g.reason
    # where L3 weighs so much that the fitter's c costs more than a trivial solution: no gain to attain
    heavy = read(synthetic, best, lambda3=100.0)
    assert heavy.loss_attainable >= min(heavy.loss_expert, heavy.loss_cd) and heavy.reason == gates.NO_GAIN
    # with fewer than 3 members the fitter cannot run: no attainable solution, the gap is not measured
    alone = gates.gates_at(lp, elm, alm, best, None, lambda2=10.0, lambda3=0.01)
    assert math.isnan(alone.loss_attainable) and alone.reason == gates.NOT_MEASURED


def test_the_trivial_solutions_hold_the_terms_the_rule_gives_them(synthetic):
    lp, elm, alm, best = synthetic
    g = read(synthetic, best)
    assert g.l2_expert == pytest.approx(0, abs=1e-6) and g.l3_cd == 0.0 and g.collapsed_expert == 1.0
    assert g.l3_expert == pytest.approx(float(alm.double().std(-1, unbiased=False).pow(2).mean().sqrt()))
    c = asymptote(elm, best.prime)  # the fitter's c, renormalised: the smallest L3 realising it
    d = (elm - alm - c.log()).double()
    assert g.l3_attainable == pytest.approx(float(d.var(-1, unbiased=False).mean().sqrt()), rel=1e-5)
    shifted = gates.objective_terms(
        lp, alm, gates.Solution(best.prime + 0.1, best.curve, best.c), lambda2=10, lambda3=1
    )
    assert shifted["l3"] > g.l3_attainable  # any other shift of the same c costs more


def test_curve_alive_passes_on_the_fitters_curves_and_fails_on_a_flat_curve(synthetic):
    lp, elm, alm, best = synthetic
    assert read(synthetic, best).alive
    flat = read(synthetic, gates.flat_solution(elm, best.prime, lp.shape[0]))
    assert flat.curve_alive == 0.0 and not flat.alive and flat.reason.startswith("curve model inert")


def test_moved_passes_at_the_attainable_alm_prime_and_fails_at_the_alm(synthetic):
    lp, elm, alm, best = synthetic
    assert read(synthetic, best).moved
    cd = read(synthetic, gates.cd_solution(lp, elm, alm))
    assert cd.moved_kl == 0.0 and not cd.moved


def test_checks_read_every_gate_on_every_solution(synthetic):
    # whatever the trained ALM' is, the page's checks pass every gate on the attainable solution and
    # fail each trivial solution on at least the gates it cannot pass
    lp, elm, alm, best = synthetic
    for trained in (best, gates.cd_solution(lp, elm, alm), gates.flat_solution(elm, best.prime, lp.shape[0])):
        rows = {r["solution"]: r for r in read(synthetic, trained).checks()}
        assert rows["attainable"]["alive"] and rows["attainable"]["not trivial"] and rows["attainable"]["moved"]
        assert rows["attainable"]["gap share"] == pytest.approx(1.0)
        assert not rows["cd"]["alive"] and not rows["cd"]["not trivial"] and not rows["cd"]["moved"]
        assert not rows["expert"]["alive"] and not rows["expert"]["not trivial"]
    # the trained row is the gates' own reading
    g = read(synthetic, gates.cd_solution(lp, elm, alm))
    own = g.checks()[0]
    assert (own["alive"], own["not trivial"], own["moved"]) == (g.alive, g.not_trivial, g.moved)
    # where L3 weighs so much that no gain is left, not trivial fails for every solution, the attainable too
    heavy = read(synthetic, best, lambda3=100.0)
    assert not any(r["not trivial"] for r in heavy.checks()) and heavy.checks()[1]["alive"]


def test_the_objective_rows_round_trip(synthetic):
    g = read(synthetic, synthetic[-1])
    assert [r["solution"] for r in g.objective_rows()] == list(gates.SOLUTIONS)
    assert g.objective_rows()[1]["L"] == g.loss_attainable
    assert Gates.from_dict(g.to_dict()).to_dict() == g.to_dict()


def test_measured_on_the_smoke_alm_prime(smoke_family):
    fam, built, result = smoke_family
    g = gates.measure_gates(result.alm_prime_path, result.collect_dir, max_chunks=2, device="cpu")
    assert g.n_positions > 0 and g.n_tokens == g.n_positions * 20
    assert 0 <= g.collapsed <= 1 and 0 <= g.collapsed_cd <= 1 and g.moved_kl >= 0 and g.curve_alive >= 0
    again = gates.measure_gates(result.alm_prime_path, result.collect_dir, max_chunks=2, device="cpu")
    assert again.to_dict() == g.to_dict()  # deterministic
    assert doctest.testmod(gates, optionflags=doctest.ELLIPSIS).failed == 0
    with pytest.raises(ValueError, match="no chunks"):
        gates.measure_gates(result.alm_prime_path, result.collect_dir, max_chunks=0, device="cpu")


def test_the_distilled_variant_is_gated_on_its_own_c_not_the_fitters_refit():
    """Fidelity: the c of ALM' must be closer (KL) to the fitter's targets than the expert's probability is.
    The refitted curves' 'alive' reading passes by construction and no longer decides."""
    good = make(fidelity_apd=0.1, fidelity_elm=0.36, fidelity_cd=2.47)
    assert good.distilled and good.fidelity and good.engaged
    assert good.gap_share == pytest.approx(0.26 / 0.36)  # its objective: the distance to its targets
    assert make(fidelity_apd=0.2, fidelity_elm=0.36, fidelity_cd=2.47).reason == gates.NEAR_TRIVIAL
    bad = make(fidelity_apd=1.07, fidelity_elm=0.36, fidelity_cd=2.47)  # curves alive, c far from its targets
    assert bad.curve_alive >= THRESHOLDS.alive_min and not bad.fidelity and not bad.engaged
    assert bad.reason == f"ALM' does not realise its distillation targets (fidelity); {gates.NEAR_TRIVIAL}"
    # under the looser thresholds the refit decides (and moved needed only 1e-3 nats)
    assert bad.under(gates.LOOSE_THRESHOLDS).alive
    assert not make(moved_kl=0.003).engaged and make(moved_kl=0.003).under(gates.LOOSE_THRESHOLDS).engaged
    # a run with a curve MLP has no fidelity to read
    assert not make().distilled and make().fidelity
    # the measurements and thresholds round-trip (an older record without fidelity reads as NaN)
    assert Gates.from_dict(bad.to_dict()).to_dict() == bad.to_dict()
    old = {k: v for k, v in make().to_dict().items() if not k.startswith("fidelity")}
    assert not Gates.from_dict(old).distilled


def test_fidelity_kl_on_a_tiny_case():
    t = torch.tensor([[0.5, 0.5]])
    kl = gates._kl_rows(t, torch.tensor([[0.25, 0.75]]))
    assert float(kl[0]) == pytest.approx(
        0.5 * torch.log(torch.tensor(2.0)).item() + 0.5 * torch.log(torch.tensor(2 / 3)).item()
    )
    assert float(gates._kl_rows(t, t)[0]) == pytest.approx(0.0)
