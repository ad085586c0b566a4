"""apd.amateur.gates: the mechanism gates of a trained ALM'."""
import doctest

import pytest

from apd.amateur import gates
from apd.amateur.gates import THRESHOLDS, Gates


def make(**kw):
    base = dict(curve_alive=0.8, l1_curve=0.01, l1_flat=0.02, collapsed=0.3, collapsed_cd=0.25, moved_kl=0.05,
                toward_expert=0.4, n_positions=10, n_tokens=200)
    return Gates(**{**base, **kw})


def test_every_gate_and_its_reason():
    assert make().engaged and make().reason == ""
    inert = make(curve_alive=0.01)
    assert not inert.engaged and inert.reason == "curve model inert"
    assert make(l1_curve=0.03).reason == "curve model inert"              # alive but no better than a flat line
    collapsed = make(collapsed=0.85, collapsed_cd=0.27)
    assert collapsed.reason == "c collapsed to the expert"
    assert make(collapsed=0.6, collapsed_cd=0.7).not_trivial               # CD is already there: not APD's doing
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
    assert again.to_dict() == g.to_dict()                                  # deterministic
    assert doctest.testmod(gates, optionflags=doctest.ELLIPSIS).failed == 0
    with pytest.raises(ValueError, match="no chunks"):
        gates.measure_gates(result.alm_prime_path, result.collect_dir, max_chunks=0, device="cpu")
