import pytest

from k3lite.base import evidence as ev


def test_every_kind_has_a_distinct_marker_and_meaning():
    assert len(set(ev.MARKERS.values())) == len(ev.KINDS) == len(ev.MEANING)
    assert all(ev.MARKERS[k] in ev.LEGEND and k in ev.LEGEND for k in ev.KINDS)


def test_constructors_name_their_kind_and_source():
    from k3lite.analytic.ledger import ledger

    d = ev.derived(ledger)
    assert d.kind == "derived" and d.source == "k3lite.analytic.ledger.ledger"
    assert d.note.startswith("ᵈ derived: k3lite.analytic.ledger.ledger")
    assert ev.kind_of(f"tokens/s {ev.assumed('ours').marker}") == "assumed"
    assert ev.kind_of("tokens/s") is None
    assert ev.released("config.json").marker == "ʳ"
    assert ev.measured_here("python -m k3lite.bench").kind == "measured here"
    assert ev.measured_elsewhere("SemiAnalysis").kind == "measured elsewhere"


def test_bad_evidence_is_refused():
    with pytest.raises(ValueError, match="must be one of"):
        ev.Evidence("guessed", "x")
    with pytest.raises(ValueError, match="needs a source"):
        ev.assumed("  ")
    with pytest.raises(ValueError, match="names the function"):
        ev.derived()


def test_units_rule_decimal_bytes_binary_capacity_and_one_million():
    from k3lite.base.units import ONE_M_CONTEXT, PER_M_TOKENS, fmt_bytes, fmt_capacity

    assert fmt_bytes(80e9) == "80.0 GB" and fmt_capacity(80 * 2**30) == "80.0 GiB"
    assert fmt_capacity(81_559 * 2**20) == "79.6 GiB"  # nvidia-smi's H100 "80GB"
    assert ONE_M_CONTEXT == 2**20 and PER_M_TOKENS == 10**6
