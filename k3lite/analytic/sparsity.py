"""The seed article's "about 1.8%" beside the share of parameters a token uses: both right, counting different things.

The article's claims and their computations are the guided tour's steps (k3lite/tour/steps.py: the pages' own
functions at their default settings), so the article page, the tour and the pages show one number per claim.
This reconciliation is spelled out here because a student meets it first: 16 of 896 routed experts is a share
of experts; the parameters a token multiplies with (its experts plus everything no router skips) are a larger
share of all parameters, computed from the one parameter count.
"""
from __future__ import annotations

from typing import NamedTuple

from k3lite.base.wording import direction, times
from k3lite.model.config import routed_fraction
from k3lite.model.presets import get_preset
from k3lite.analytic.params import count_params


class SparsityShares(NamedTuple):
    top_k: int
    n_routed: int
    expert_share: float  # top_k / n_routed: the article's "about 1.8%" (16 of 896 experts)
    total: int  # parameters of the whole model
    routed_total: int  # parameters of all routed experts
    routed_active: int  # parameters of the top_k experts one token visits: routed_total x top_k / n_routed
    always_on: int  # parameters every token uses: attention, shared experts, router, latent projections, head, ...
    active: int  # routed_active + always_on
    param_share: float  # active / total: the app's activation ratio (computed from the parameter count)

    def sentence(self) -> str:
        """The reconciliation in words, from the numbers."""
        return (f"{100 * self.expert_share:.1f}% counts **experts**: a token visits {self.top_k} of the "
                f"{self.n_routed} routed experts. {100 * self.param_share:.2f}% counts **parameters**: those "
                f"{self.top_k} experts hold {self.routed_active / 1e9:.0f}B parameters "
                f"({100 * self.routed_active / self.total:.2f}% of all {self.total / 1e12:.2f}T), and every token also "
                f"uses {self.always_on / 1e9:.0f}B parameters that no router skips (attention, shared experts, "
                f"router, latent projections, dense layers, LM head). Together: {self.active / 1e9:.0f}B of "
                f"{self.total / 1e12:.2f}T = {100 * self.param_share:.2f}%, "
                f"{times(self.param_share, self.expert_share, 'larger', 'smaller', 'the same', digits=1)}"
                + (" than the expert share." if direction(self.param_share, self.expert_share) else " as the expert share."))


def sparsity_shares(preset: str = "kimi-k3") -> SparsityShares:
    """The two shares of K3 a student can call "the fraction a token uses", from one parameter count."""
    cfg = get_preset(preset)
    rep = count_params(cfg)
    k, e = cfg.moe.top_k, cfg.moe.n_routed_experts
    routed_total = rep.by_component["routed_experts"]
    routed_active = rep.active_by_component["routed_experts"]
    return SparsityShares(k, e, routed_fraction(k, e), rep.total, routed_total, routed_active,
                          rep.active - routed_active, rep.active, rep.activation_ratio)
