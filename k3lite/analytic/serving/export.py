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
from k3lite.analytic.serving.price import RequestPrice, request_price
from k3lite.analytic.serving.step import decode_step
from k3lite.analytic.serving.target import Target, solve

YOURS = assumed("yours: set on the page")


def scenario_link(base: str, params: dict) -> str:
    """The page's URL with its settings as the query string (what the page mirrors into its address bar)."""
    base = (base or "").split("?")[0]
    return base + ("?" + urlencode(sorted((k, str(v)) for k, v in params.items())) if params else "")


def prices(what: str, p: RequestPrice, ev: Evidence) -> list[Quantity]:
    """One request's price as the export lists it: blended at the shape, input, output (price.RequestPrice)."""
    return [Quantity(f"{what} $ per M tokens at {p.shape.label} (input + output)", p.usd_per_m, "$", ev),
            Quantity(f"{what} $ per M input tokens", p.usd_per_m_input, "$", ev),
            Quantity(f"{what} $ per M output tokens", p.usd_per_m_output, "$", ev)]


def serving_scenario(s: Serving | None, price_ev: Evidence, speed: float, winner=None, batch: int | None = None,
                     predicted: RequestPrice | None = None, bound: RequestPrice | None = None,
                     target: Target | None = None, target_inputs: dict | None = None,
                     error: str = "") -> tuple[list[Quantity], list[Quantity]]:
    """(inputs, outputs) of the serving page: `s` the deployment (None when it does not run: `error` says why),
    `winner` the frontier's cheapest point at `speed`, `predicted` / `bound` the deployment's request prices at
    `batch` (price.request_price), `target` solve()'s answer for `target_inputs` ({"speed", "users", "input_len",
    "output_len", "cached"}). Every price is one request of the page's shape: one price, three ways to quote it."""
    ins = [Quantity("interactive speed asked", speed, "tokens/s per user", YOURS)]
    outs = []
    if winner is not None:
        ev = derived(frontier, verdict, request_price)
        outs += [Quantity("frontier: cheapest setup", winner.label, "", ev), *prices("frontier:", winner.price, ev),
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
                          derived(request_price)),
                 *prices("deployment: predicted", predicted, derived(request_price)),
                 Quantity("deployment: bound tokens/s per user", bound.tokens_per_s_per_user, "tokens/s",
                          derived(request_price, decode_step)),
                 *prices("deployment: bound", bound, derived(request_price, decode_step))]
    if target is not None:
        ins += [Quantity(f"target: {k}", v, "", YOURS) for k, v in (target_inputs or {}).items()]
        ev = derived(solve)
        outs += [Quantity("target: requests per replica", target.concurrency, "requests", ev),
                 *(prices("target:", target.price, ev) if target.price is not None else []),
                 Quantity("target: replicas", target.replicas, "", ev),
                 Quantity("target: GPUs", target.gpus, "", ev),
                 Quantity("target: $ per month", target.usd_per_month, "$", ev)]
    return ins, outs
