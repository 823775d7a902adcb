"""The serving page's scenario as Quantities (k3lite.base.scenario): the deployment's inputs and the page's outputs,
each with its unit and evidence class, and the link that reopens the page on it.

`serving_scenario(...)` -> (inputs, outputs); `scenario_link(base, params)` -> the page's URL with its settings.
"""
from __future__ import annotations

from urllib.parse import urlencode

from k3lite.base.evidence import Evidence, assumed, derived
from k3lite.base.scenario import Quantity
from k3lite.analytic.serving.deployment import Serving
from k3lite.analytic.serving.frontier import frontier, verdict
from k3lite.analytic.serving.predict import as_step
from k3lite.analytic.serving.step import decode_step
from k3lite.analytic.serving.target import Target, solve

YOURS = assumed("yours: set on the page")


def scenario_link(base: str, params: dict) -> str:
    """The page's URL with its settings as the query string (what the page mirrors into its address bar)."""
    base = (base or "").split("?")[0]
    return base + ("?" + urlencode(sorted((k, str(v)) for k, v in params.items())) if params else "")


def serving_scenario(s: Serving | None, price_ev: Evidence, speed: float, winner=None, batch: int | None = None,
                     predicted=None, bound=None, target: Target | None = None, target_inputs: dict | None = None,
                     error: str = "") -> tuple[list[Quantity], list[Quantity]]:
    """(inputs, outputs) of the serving page: `s` the deployment (None when it does not run: `error` says why),
    `winner` the frontier's cheapest point at `speed`, `predicted` / `bound` the deployment's steps at `batch`,
    `target` solve()'s answer for `target_inputs` ({"speed", "users", "input_len", "output_len"})."""
    ins = [Quantity("interactive speed asked", speed, "tokens/s per user", YOURS)]
    outs = []
    if winner is not None:
        ev = derived(frontier, verdict)
        outs += [Quantity("frontier: cheapest setup", winner.label, "", ev),
                 Quantity("frontier: $ per M output tokens", winner.usd_per_m_output_tokens, "$", ev),
                 Quantity("frontier: tokens/s per user", winner.tokens_per_s_per_user, "tokens/s", ev)]
    if s is not None:
        inp = s.inputs()
        ins += [Quantity(f"deployment: {k}", v if isinstance(v, (int, float, str)) else str(v), "", YOURS)
                for k, v in inp.items() if k != "usd_per_gpu_hour"]
        ins.append(Quantity("deployment: $ per GPU-hour", s.price, "$", price_ev))
    if error:
        outs.append(Quantity("deployment: error", error, "", derived(decode_step)))
    if predicted is not None and bound is not None:
        ins.append(Quantity("deployment: batch per GPU", batch, "sequences", YOURS))
        outs += [Quantity("deployment: predicted tokens/s per user", predicted.tokens_per_s_per_user, "tokens/s",
                          derived(as_step)),
                 Quantity("deployment: predicted $ per M output tokens", predicted.usd_per_m_output_tokens, "$",
                          derived(as_step)),
                 Quantity("deployment: bound tokens/s per user", bound.tokens_per_s_per_user, "tokens/s",
                          derived(decode_step)),
                 Quantity("deployment: bound $ per M output tokens", bound.usd_per_m_output_tokens, "$",
                          derived(decode_step))]
    if target is not None:
        ins += [Quantity(f"target: {k}", v, "", YOURS) for k, v in (target_inputs or {}).items()]
        ev = derived(solve)
        outs += [Quantity("target: requests per replica", target.concurrency, "requests", ev),
                 Quantity("target: $ per M output tokens", target.usd_per_m_output, "$", ev),
                 Quantity("target: replicas", target.replicas, "", ev),
                 Quantity("target: GPUs", target.gpus, "", ev),
                 Quantity("target: $ per month", target.usd_per_month, "$", ev)]
    return ins, outs
