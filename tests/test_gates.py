"""apd.amateur.gates: the mechanism gates of a trained ALM'."""

import doctest

import pytest

from apd.amateur import gates
from apd.amateur.gates import THRESHOLDS, Gates


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
    )
    return Gates(**{**base, **kw})


def test_every_gate_and_its_reason():
    assert make().engaged and make().reason == ""
    inert = make(curve_alive=0.01)
    assert not inert.engaged and inert.reason == "curve model inert"
    assert make(l1_curve=0.03).reason == "curve model inert"  # alive but no better than a flat line
    collapsed = make(collapsed=0.85, collapsed_cd=0.27)
    assert collapsed.reason == "c collapsed to the expert"
    assert make(collapsed=0.6, collapsed_cd=0.7).not_trivial  # CD is already there: not APD's doing
    assert make(moved_kl=1e-5).reason == "ALM' did not move from the ALM"
    both = make(curve_alive=0.0, collapsed=0.9).to_dict()
    assert both["reason"] == "curve model inert; c collapsed to the expert" and both["engaged"] is False
    assert both["threshold_alive_min"] == THRESHOLDS.alive_min


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
    good = make(fidelity_apd=0.2, fidelity_elm=0.36, fidelity_cd=2.47)
    assert good.distilled and good.fidelity and good.engaged
    bad = make(fidelity_apd=1.07, fidelity_elm=0.36, fidelity_cd=2.47)  # curves alive, c far from its targets
    assert bad.curve_alive >= THRESHOLDS.alive_min and not bad.fidelity and not bad.engaged
    assert bad.reason == "ALM' does not realise its distillation targets (fidelity)"
    # under the looser thresholds the refit decides (and moved needed only 1e-3 nats)
    assert bad.under(gates.LOOSE_THRESHOLDS).engaged
    assert not make(moved_kl=0.003).engaged and make(moved_kl=0.003).under(gates.LOOSE_THRESHOLDS).engaged
    # a run with a curve MLP has no fidelity to read
    assert not make().distilled and make().fidelity
    # the measurements and thresholds round-trip (an older record without fidelity reads as NaN)
    assert Gates.from_dict(bad.to_dict()).to_dict() == bad.to_dict()
    old = {k: v for k, v in make().to_dict().items() if not k.startswith("fidelity")}
    assert not Gates.from_dict(old).distilled


def test_fidelity_kl_on_a_tiny_case():
    import torch

    t = gates._renorm(torch.tensor([[2.0, 2.0]]))  # renormalised: [0.5, 0.5]
    kl = gates._kl_rows(t, gates._renorm(torch.tensor([[1.0, 3.0]])))  # q = [0.25, 0.75]
    assert float(kl[0]) == pytest.approx(
        0.5 * torch.log(torch.tensor(2.0)).item() + 0.5 * torch.log(torch.tensor(2 / 3)).item()
    )
    assert float(gates._kl_rows(t, t)[0]) == pytest.approx(0.0)
