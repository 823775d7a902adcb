"""The recall-task generators produce exactly the sequences their docstrings promise."""
import pytest
import torch

from k3lite.experiments.tasks import IGNORE, POP, SEP, TaskSpec, make_batch, mqar, palindrome, stack


def test_mqar_labels_only_at_queries_and_keys_values_disjoint():
    V, T, N = 64, 64, 8
    b = mqar(16, T, V, N, seed=3, step=5)
    assert b.inputs.shape == b.targets.shape == (16, T)
    for row_in, row_t in zip(b.inputs.tolist(), b.targets.tolist()):
        keys, values = row_in[0:2 * N:2], row_in[1:2 * N:2]
        assert all(1 <= k < V // 2 for k in keys), "keys come from the lower half, token 0 excluded"
        assert all(V // 2 <= v < V for v in values), "values come from the upper half"
        assert len(set(keys)) == N and len(set(values)) == N
        pair = dict(zip(keys, values))
        scored = [t for t, y in enumerate(row_t) if y != IGNORE]
        assert len(scored) == N, "one scored position per key-value pair"
        assert all(t >= 2 * N and (t - 2 * N) % 2 == 0 for t in scored), "queries sit on even slots after the pairs"
        for t in scored:
            assert row_in[t] in pair, "a scored position holds a key"
            assert row_t[t] == pair[row_in[t]], "its label is that key's value"
        assert sorted(row_in[t] for t in scored) == sorted(keys), "every key is queried exactly once"
        assert all(row_t[t] == IGNORE for t in range(2 * N)), "no labels inside the key-value block"


def test_mqar_gaps_follow_a_power_law():
    """Zoology's p(gap) ~ gap^(a-1) with a = 0.01: short gaps are far more frequent than long ones."""
    T, N = 256, 4
    b = mqar(256, T, 256, N, seed=0)
    gaps = ((b.targets != IGNORE).nonzero()[:, 1] - 2 * N) // 2  # slot index of each query
    space = (T - 2 * N) // 2
    near = int((gaps < space // 8).sum())
    far = int((gaps >= space - space // 8).sum())
    assert near > 4 * far, (near, far)


def test_mqar_is_seeded_and_steps_differ():
    a = mqar(4, 32, 64, 4, seed=1, step=2)
    b = mqar(4, 32, 64, 4, seed=1, step=2)
    c = mqar(4, 32, 64, 4, seed=1, step=3)
    assert torch.equal(a.inputs, b.inputs) and torch.equal(a.targets, b.targets)
    assert not torch.equal(a.inputs, c.inputs)


@pytest.mark.parametrize("kwargs", [dict(seq_len=31, num_pairs=4), dict(seq_len=32, num_pairs=9),
                                    dict(seq_len=64, num_pairs=16, vocab_size=32)])
def test_mqar_rejects_impossible_layouts(kwargs):
    with pytest.raises(ValueError):
        TaskSpec(task="mqar", **{"vocab_size": 256, **kwargs})


def test_palindrome_labels_are_the_block_reversed():
    T, n = 20, 7
    b = palindrome(5, T, 30, num_tokens=n, seed=2)
    for row_in, row_t in zip(b.inputs.tolist(), b.targets.tolist()):
        block = row_in[:n]
        assert all(2 <= x < 30 for x in block)
        assert row_in[n] == SEP
        scored = [y for y in row_t if y != IGNORE]
        assert scored == block[::-1]
        assert [t for t, y in enumerate(row_t) if y != IGNORE] == list(range(n, 2 * n))
        assert row_in[n + 1: 2 * n] == block[::-1][:-1], "the answer so far is fed back as input"


def test_stack_labels_are_the_popped_top():
    b = stack(8, 64, 12, seed=4)
    for row_in, row_t in zip(b.inputs.tolist(), b.targets.tolist()):
        st = []
        for x, y in zip(row_in, row_t):
            if x == POP:
                assert st, "never pops an empty stack"
                assert y == st.pop(), "the label of a POP is the element it removes"
            else:
                assert 2 <= x < 12 and y == IGNORE, "pushes are not scored"
                st.append(x)
    assert int((b.targets != IGNORE).sum()) > 0


def test_make_batch_dispatch_and_validation():
    for task in ("mqar", "palindrome", "stack"):
        batch = make_batch(TaskSpec(task=task, seq_len=32, vocab_size=64, num_pairs=4), 3, seed=0, step=0)
        assert batch.inputs.dtype == torch.int64 and batch.inputs.shape == (3, 32)
        assert int(batch.inputs.max()) < 64 and int(batch.inputs.min()) >= 0
        assert bool((batch.targets != IGNORE).any())
    with pytest.raises(ValueError, match="task"):
        TaskSpec(task="sorting")
    with pytest.raises(ValueError, match="batch_size"):
        make_batch(TaskSpec(), 0)
    with pytest.raises(ValueError, match="num_tokens"):
        palindrome(2, 10, 20, num_tokens=6)


def test_mqar_query_order_follows_key_order_halfway():
    """The comment in `mqar` says it: gaps are drawn in key order, short first, so query order correlates ~0.5 with
    key order (rank correlation), not 0 (a random order) and not 1 (the same order)."""
    import numpy as np

    from k3lite.experiments.tasks import IGNORE, mqar

    b = mqar(128, 128, 512, 32, seed=0)
    inputs, targets = b.inputs.numpy(), b.targets.numpy()
    rs = []
    for i in range(len(inputs)):
        keys = list(inputs[i, 0:64:2])
        order = [keys.index(inputs[i, p]) for p in np.where(targets[i] != IGNORE)[0]]  # key index, by query position
        rs.append(np.corrcoef(order, np.arange(32))[0, 1])
    assert 0.4 < float(np.mean(rs)) < 0.6
