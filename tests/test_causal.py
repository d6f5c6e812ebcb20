"""dsa_lab.workbook.causal: the decode row ends in both layouts; the producer writes, and the consumer reads, exactly
each row's window."""
import pytest

from dsa_lab.workbook import causal


def test_decode_bounds_table():
    t = causal.decode_bounds_table([37, 2], 3)
    assert [r["end (B,): ctx-next_n+n+1"] for r in t] == [35, 36, 37, 0, 1, 2]
    assert all(r["same"] for r in t)


def test_poisoned_tail_experiment():
    r = causal.poisoned_tail_experiment(batch=2, next_n=2, context_lens=(20, 70), max_model_len=128)
    assert r["tail_poison_kept_bit_for_bit"]
    assert r["window_matches_reference (bounded error <= 1e-3)"]
    assert r["selection_poisoned == selection_prefilled"]
    assert r["selection == exact reference"]
    assert r["rows_picking_poison_without_bounds"] == r["rows"]
    assert r["sanitize_bounded == full in window"] and r["sanitize_bounded_tail_untouched"]
    assert r["sanitize_full_changed_tail_columns"] > 0


@pytest.mark.parametrize("layout", ["1d", "2d"])
def test_fused_step_experiment(layout):
    r = causal.fused_step_experiment(batch=2, next_n=2, context_lens=(20, 70), max_model_len=128, layout=layout)
    assert r["NaN / inf logits planted in the windows"] > 0
    for key, v in r.items():
        if isinstance(v, bool):
            assert v, key
