"""Pipeline stages with Attention Residuals: the bytes per token that cross each stage boundary (analytic).

A pipeline splits the L layers (2L sublayers) into P stages on P GPUs; a token's state crosses each of the P - 1
boundaries once forward (activations) and once backward (their gradients, the same shapes). What the state is
depends on the residual (k3lite/model/attnres.py):

    standard    the running sum h: 1 vector of d
    full        every source a later sublayer reads: the embedding and every sublayer output so far, 1 + s vectors
                after s sublayers
    block       the embedding, the completed block sums and the current partial sum (if the block is unfinished):
                1 + floor(s / S) + (1 if s mod S else 0) vectors, S = the block size in sublayers (K3: 24 = 12 layers)

so with blocks the boundary carries a bank that grows by one vector per block, not per sublayer, and its width
changes from boundary to boundary (public K3 training stacks note that pipeline communication has to exchange these
changing shapes). Whether a later stage gets the bank relayed or each vector sent straight from where it was made,
every (vector, later stage) pair is delivered once: the count is the same.

Bytes per token per boundary = vectors x d x bytes per element, each direction (activations and their gradients in
the same format; BF16 = 2 bytes, as the activations of a BF16 pipeline travel). `pipeline_measured.py` splits a small
K3Model into stages on gloo processes, passes the real stream tensors, and counts the same numbers.
"""
from __future__ import annotations

from typing import NamedTuple

from k3lite.base.evidence import Evidence, derived
from k3lite.model.config import ATTN_RES_MODES, K3Config


def stage_layers(n_layers: int, stages: int) -> list[int]:
    """Layers per stage, as even as possible: the first n_layers mod stages stages hold one more."""
    if not 1 <= stages <= n_layers:
        raise ValueError(f"stages must be in [1, n_layers={n_layers}], got {stages}")
    base, extra = divmod(n_layers, stages)
    return [base + (i < extra) for i in range(stages)]


def boundary_vectors(mode: str, sublayers_before: int, block_size: int = 1) -> int:
    """Vectors of d one token's state holds after `sublayers_before` sublayers (what a stage boundary carries)."""
    if mode not in ATTN_RES_MODES:
        raise ValueError(f"mode must be one of {ATTN_RES_MODES}, got {mode!r}")
    if sublayers_before < 0 or block_size < 1:
        raise ValueError(f"need sublayers_before >= 0 and block_size >= 1, got {sublayers_before}, {block_size}")
    if mode == "standard":
        return 1
    if mode == "full":
        return 1 + sublayers_before
    done, rem = divmod(sublayers_before, block_size)
    return 1 + done + (1 if rem else 0)


class Boundary(NamedTuple):
    after_layer: int  # the boundary follows this many layers
    vectors: int  # vectors of d per token crossing it
    forward_bytes: int  # per token: activations
    backward_bytes: int  # per token: their gradients


class PipelineBytes(NamedTuple):
    """Bytes per token across every stage boundary of one training step's pipeline."""

    mode: str
    block_size: int  # in sublayers (1 for standard / full)
    stages: int
    d_model: int
    bytes_per_elem: int
    boundaries: list[Boundary]
    evidence: Evidence

    @property
    def forward(self) -> int:
        return sum(b.forward_bytes for b in self.boundaries)

    @property
    def backward(self) -> int:
        return sum(b.backward_bytes for b in self.boundaries)

    @property
    def total(self) -> int:
        return self.forward + self.backward

    @property
    def widest(self) -> int:
        """The most vectors any boundary carries (the largest message shape)."""
        return max((b.vectors for b in self.boundaries), default=0)


def boundary_bytes(n_layers: int, d_model: int, mode: str, stages: int, block_size: int = 1,
                   bytes_per_elem: int = 2) -> PipelineBytes:
    """Per boundary: vectors and bytes per token, forward and backward (layers split by `stage_layers`)."""
    if d_model < 1 or bytes_per_elem < 1:
        raise ValueError(f"d_model and bytes_per_elem must be >= 1, got {d_model}, {bytes_per_elem}")
    layers = stage_layers(n_layers, stages)
    bs = block_size if mode == "block" else 1
    out, after = [], 0
    for n in layers[:-1]:
        after += n
        v = boundary_vectors(mode, 2 * after, bs)
        out.append(Boundary(after, v, v * d_model * bytes_per_elem, v * d_model * bytes_per_elem))
    return PipelineBytes(mode, bs, stages, d_model, bytes_per_elem, out, derived(boundary_bytes, boundary_vectors))


def pipeline_bytes(cfg: K3Config, stages: int, mode: str | None = None, bytes_per_elem: int = 2) -> PipelineBytes:
    """boundary_bytes for a config: its own residual (or `mode` instead), its block size."""
    return boundary_bytes(cfg.n_layers, cfg.d_model, mode or cfg.attn_res, stages, cfg.attn_res_block_size,
                          bytes_per_elem)


def residual_comparison(cfg: K3Config, stages: int, bytes_per_elem: int = 2) -> dict[str, PipelineBytes]:
    """The same pipeline with a standard residual, full AttnRes and block AttnRes at the config's block size."""
    return {mode: pipeline_bytes(cfg, stages, mode, bytes_per_elem) for mode in ("standard", "full", "block")}
