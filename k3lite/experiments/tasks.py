"""Synthetic recall tasks for the lab, generated on the fly and seeded.

The Kimi Linear tech report (arXiv 2510.26692, section "synthetic tasks") trains tiny 2-layer models on
three probes of what a fixed-size recurrent state can hold:

  MQAR        multi-query associative recall, exactly as Zoology defines it
              (Arora et al. 2023, arXiv 2312.04927; HazyResearch/zoology `multiquery_ar`):
              key-value pairs first, then the keys again as queries at power-law-spaced gaps; the model
              must emit each key's value. Keys come from the lower half of the vocab, values from the
              upper half; token 0 is never a key.
  Palindrome  a block of random tokens, a separator, then the same block reversed.
  Stack       a stream of PUSH(value) / POP operations; at every POP predict the element it pops (the top).

Every batch is a `TaskBatch(inputs, targets)` of int64 tensors `(B, T)`. `targets` is `IGNORE` (-100, what
`F.cross_entropy(ignore_index=-100)` skips) everywhere except the positions that are scored, so loss and
accuracy only count the answers (query positions for MQAR, the reversed half for Palindrome, the POPs
for Stack). Position t's target is what the model should *output* at t, having read inputs[: t + 1].

Determinism: `make_batch(..., seed=s, step=i)` depends only on (s, i), so a training run is reproducible and
batch i never depends on how many batches came before.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import torch

IGNORE = -100
TASKS: tuple[str, ...] = ("mqar", "palindrome", "stack")

PAD, SEP, POP = 0, 1, 1  # special tokens of palindrome (PAD, SEP) and stack (PAD, POP); MQAR has none


class TaskBatch(NamedTuple):
    inputs: torch.Tensor  # (B, T) int64 tokens
    targets: torch.Tensor  # (B, T) int64, IGNORE where not scored


@dataclass(frozen=True)
class TaskSpec:
    """Everything that defines a task's distribution (the seed and step pick the sample)."""

    task: str = "mqar"
    seq_len: int = 128
    vocab_size: int = 256
    num_pairs: int = 16  # MQAR: key-value pairs; ignored by palindrome/stack
    power_a: float = 0.01  # MQAR: gap distribution p(g) ~ a * g^(a-1) (Zoology's default 0.01)
    num_tokens: int | None = None  # palindrome: block length to reverse (None = seq_len // 2)

    def __post_init__(self) -> None:
        if self.task not in TASKS:
            raise ValueError(f"task must be one of {TASKS}, got {self.task!r}")
        if not isinstance(self.seq_len, int) or self.seq_len < 4:
            raise ValueError(f"seq_len must be an integer >= 4, got {self.seq_len!r}")
        if not isinstance(self.vocab_size, int) or self.vocab_size < 4:
            raise ValueError(f"vocab_size must be an integer >= 4, got {self.vocab_size!r}")
        if self.task == "mqar":
            _check_mqar(self.seq_len, self.vocab_size, self.num_pairs, self.power_a)


def _check_mqar(seq_len: int, vocab_size: int, num_pairs: int, power_a: float) -> None:
    if seq_len % 2:
        raise ValueError(f"MQAR needs an even seq_len (pairs are 2 tokens), got {seq_len}")
    if not isinstance(num_pairs, int) or num_pairs < 1:
        raise ValueError(f"num_pairs must be a positive integer, got {num_pairs!r}")
    if 4 * num_pairs > seq_len:
        raise ValueError(
            f"MQAR needs seq_len >= 4 x num_pairs (pairs, then room for the queries): "
            f"{seq_len} < 4 x {num_pairs}"
        )
    if num_pairs > vocab_size // 2 - 1:
        raise ValueError(
            f"num_pairs ({num_pairs}) must be <= vocab_size // 2 - 1 = {vocab_size // 2 - 1} "
            f"(distinct keys from the lower half of the vocab, token 0 excluded)"
        )
    if not 0 < power_a <= 1:
        raise ValueError(f"power_a must be in (0, 1], got {power_a}")


def _rng(seed: int, step: int) -> np.random.Generator:
    return np.random.default_rng([int(seed) & 0xFFFFFFFF, int(step) & 0xFFFFFFFF])


def _choose_without_replacement(rng, n_rows: int, n_choices: int, k: int, log_p=None) -> np.ndarray:
    """k distinct indices in [0, n_choices) per row, optionally weighted (Gumbel top-k = sequential draws)."""
    scores = rng.gumbel(size=(n_rows, n_choices))  # (B, n)
    if log_p is not None:
        scores = scores + log_p[None, :]
    return np.argsort(-scores, axis=1)[:, :k]  # (B, k)


# ------------------------------------------------------------------------------------------------ MQAR
def mqar(batch_size: int, seq_len: int, vocab_size: int, num_pairs: int, *, seed: int = 0, step: int = 0,
         power_a: float = 0.01, random_non_queries: bool = True) -> TaskBatch:
    """Zoology's `multiquery_ar`, vectorised.

    Layout (C = 2 * num_pairs):  k1 v1 k2 v2 ... kN vN | q-region of T - C slots
    The q-region has `space = (T - C) // 2` even slots; query i (key i again) lands at slot
    `gap_i`, drawn without replacement with p(gap) ~ a * gap^(a - 1) (a = power_a: mostly short gaps, a long
    tail). The target at the query's position is its value. Unused q-region slots get random tokens from the
    whole vocab (Zoology's random_non_queries) so the model cannot spot queries by "non-zero".
    """
    _check_mqar(seq_len, vocab_size, num_pairs, power_a)
    rng = _rng(seed, step)
    B, N, C = batch_size, num_pairs, 2 * num_pairs
    half = vocab_size // 2
    keys = 1 + _choose_without_replacement(rng, B, half - 1, N)  # (B, N) in [1, half)
    values = half + _choose_without_replacement(rng, B, vocab_size - half, N)  # (B, N) in [half, V)
    space = (seq_len - C) // 2
    g = np.arange(1, space + 1, dtype=np.float64)
    log_p = np.log(power_a * g ** (power_a - 1))
    gaps = _choose_without_replacement(rng, B, space, N, log_p)  # (B, N) distinct slots
    inputs = np.zeros((B, seq_len), dtype=np.int64)
    if random_non_queries:
        inputs[:, C:] = rng.integers(0, vocab_size, size=(B, seq_len - C))
    inputs[:, 0:C:2] = keys
    inputs[:, 1:C:2] = values
    targets = np.full((B, seq_len), IGNORE, dtype=np.int64)
    pos = C + 2 * gaps  # (B, N) query positions
    rows = np.arange(B)[:, None]
    # query i asks for key i again. The gaps are drawn in key order without replacement, short gaps first, so
    # earlier keys tend to be asked earlier: query order follows key order with a rank correlation of ~0.5
    # (Zoology's generator does the same; tests/experiments/test_tasks.py measures it)
    inputs[rows, pos] = keys
    targets[rows, pos] = values
    return TaskBatch(torch.from_numpy(inputs), torch.from_numpy(targets))


# ------------------------------------------------------------------------------------------ Palindrome
def palindrome(batch_size: int, seq_len: int, vocab_size: int, *, num_tokens: int | None = None,
               seed: int = 0, step: int = 0) -> TaskBatch:
    """x1 .. xn SEP xn .. x2 (then PAD): at SEP and after, output the block reversed (xn, ..., x1).

    n = num_tokens (default seq_len // 2); tokens are drawn from [2, vocab); PAD = 0, SEP = 1.
    The target at position n + j (j = 0..n-1) is x_{n-j}: reading input x_{n-j+1} the model must recall
    the token just *before* it in the first half, so the whole block has to sit in the state.
    """
    n = seq_len // 2 if num_tokens is None else num_tokens
    if not isinstance(n, int) or n < 1 or 2 * n > seq_len:
        raise ValueError(f"palindrome needs 1 <= num_tokens <= seq_len // 2 = {seq_len // 2}, got {n!r}")
    rng = _rng(seed, step)
    block = rng.integers(2, vocab_size, size=(batch_size, n))  # (B, n)
    rev = block[:, ::-1]  # (B, n)  xn .. x1
    inputs = np.full((batch_size, seq_len), PAD, dtype=np.int64)
    inputs[:, :n] = block
    inputs[:, n] = SEP
    inputs[:, n + 1: 2 * n] = rev[:, :-1]  # xn .. x2
    targets = np.full((batch_size, seq_len), IGNORE, dtype=np.int64)
    targets[:, n: 2 * n] = rev
    return TaskBatch(torch.from_numpy(inputs), torch.from_numpy(targets))


# ----------------------------------------------------------------------------------------------- Stack
def stack(batch_size: int, seq_len: int, vocab_size: int, *, push_prob: float = 0.5, seed: int = 0,
          step: int = 0) -> TaskBatch:
    """A stream of PUSH(value) / POP ops; at each POP, output the value it pops (the current top).

    A value token v in [2, vocab) means "push v"; POP = 1. A POP on an empty stack is replaced by a push.
    Only POP positions are scored: after a push the top is the token just read (trivial); after pops the
    model must remember what lies deeper, which is exactly what a LIFO needs.
    """
    if not 0 < push_prob < 1:
        raise ValueError(f"push_prob must be in (0, 1), got {push_prob}")
    rng = _rng(seed, step)
    want_push = rng.random((batch_size, seq_len)) < push_prob  # (B, T)
    values = rng.integers(2, vocab_size, size=(batch_size, seq_len))  # (B, T)
    inputs = np.empty((batch_size, seq_len), dtype=np.int64)
    targets = np.full((batch_size, seq_len), IGNORE, dtype=np.int64)
    for b in range(batch_size):  # a python stack per row: T * B tiny ops, fine at lab sizes
        st: list[int] = []
        for t in range(seq_len):
            if want_push[b, t] or not st:
                st.append(int(values[b, t]))
                inputs[b, t] = values[b, t]
            else:
                inputs[b, t] = POP
                targets[b, t] = st.pop()
    return TaskBatch(torch.from_numpy(inputs), torch.from_numpy(targets))


def chance_accuracy(task: str, vocab_size: int) -> float:
    """Accuracy per answer token of a guess uniform over the tokens an answer can be, reading nothing of the
    sequence: MQAR's values come from the upper half of the vocab (1 / (V - V // 2)); palindrome's and stack's
    answers from [2, V) (1 / (V - 2))."""
    if task not in TASKS:
        raise ValueError(f"task must be one of {TASKS}, got {task!r}")
    if vocab_size < 4:
        raise ValueError(f"vocab_size must be >= 4, got {vocab_size}")
    return 1 / (vocab_size - vocab_size // 2) if task == "mqar" else 1 / (vocab_size - 2)


# ------------------------------------------------------------------------------------------- dispatch
def make_batch(spec: TaskSpec, batch_size: int, *, seed: int = 0, step: int = 0) -> TaskBatch:
    """One batch of `spec.task`; depends only on (spec, batch_size, seed, step)."""
    if not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
    if spec.task == "mqar":
        return mqar(batch_size, spec.seq_len, spec.vocab_size, spec.num_pairs, seed=seed, step=step,
                    power_a=spec.power_a)
    if spec.task == "palindrome":
        return palindrome(batch_size, spec.seq_len, spec.vocab_size, num_tokens=spec.num_tokens, seed=seed,
                          step=step)
    return stack(batch_size, spec.seq_len, spec.vocab_size, seed=seed, step=step)
