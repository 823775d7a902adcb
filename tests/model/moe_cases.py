"""What the MoE tests share (tests/model/test_moe_*.py): a small MoEConfig, skewed router scores, the tolerance,
and one torch thread while they run."""
import pytest
import torch

from k3lite.model.config import MoEConfig

TOL = dict(atol=1e-5, rtol=1e-5)


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """Small matmuls on a shared 2-core box: two OpenMP threads spin against other processes (10x slower)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)  # fp32: grouped and per-token paths sum the same products in another order


def cfg(**kw) -> MoEConfig:
    base = dict(n_routed_experts=16, top_k=4, expert_ffn_dim=24, balancing="none")
    base.update(kw)
    return MoEConfig(**base)


def skewed_scores(n: int, e: int, skew: float = 2.0, seed: int = 0) -> torch.Tensor:
    """Sigmoid scores whose expert j is favoured by a linear ramp: raw top-k piles onto the last experts."""
    g = torch.Generator().manual_seed(seed)
    return torch.sigmoid(torch.randn(n, e, generator=g) + torch.linspace(-skew, skew, e))
