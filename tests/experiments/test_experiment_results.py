"""The experiments return result objects: attributes a reader can name, a short repr, and the
JSON form the figures' sidecars keep (``to_dict``), not nested dicts."""

from __future__ import annotations

import json

from fedtheory.experiments.fedavg_floor import FloorRegime, FloorResult, run_fedavg_floor
from fedtheory.experiments.figure4 import Figure4Regime, Figure4Result, run_figure4


def test_the_fedavg_floor_is_a_result_object():
    res = run_fedavg_floor(
        clients=6, dim=3, clients_per_round=2, local_steps=1, etas=(0.1, 0.03), seeds=2
    )
    assert isinstance(res, FloorResult) and set(res.regimes) == {"uniform", "weighted"}
    reg = res.regimes["weighted"]
    assert isinstance(reg, FloorRegime) and len(reg.exact_rms_floor) == 2
    assert reg.limit > 0 and res.regimes["uniform"].limit < 1e-10  # x_q* = x* under uniform
    assert repr(res).startswith("FloorResult(uniform: eta -> 0 limit") and len(repr(res)) < 300
    d = res.to_dict()
    assert list(d) == ["x_star_norm", "clients", "clients_per_round", "local_steps", "regimes"]
    assert d["regimes"]["weighted"]["exact_rms_floor"] == reg.exact_rms_floor
    assert json.loads(res.to_json()) == d


def test_figure4_is_a_result_object():
    res = run_figure4(rounds=220, seeds=3, algorithms=("focus", "fedavg"), regimes=("uniform",))
    assert isinstance(res, Figure4Result) and isinstance(res.regimes["uniform"], Figure4Regime)
    reg = res.regimes["uniform"]
    assert len(reg.curves["focus"]) == 221 and reg.clients_per_round == 4
    assert "uniform: focus" in repr(res) and len(repr(res)) < 300
    d = res.to_dict()
    assert set(d) == {"config", "x_star_norm", "participation_p", "regimes"}
    assert d["regimes"]["uniform"]["final"]["focus"] == reg.final["focus"]
