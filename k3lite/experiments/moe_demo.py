"""The routing page's demo: fit each balancing method on real hidden states, then route a prompt and held-out text.

    hidden states (trained lite model, or a toy byte embedding)
      -> a fresh seeded LatentMoE with the page's settings (its router untrained: how *evenly* it spreads is the point)
      -> per method, `calibrate`: the same number of balancing updates on the first 3/4 of a text stream
      -> route the prompt (panel a) and the held-out quarter (panel b), and record held-out max-violation
         after 1, 2, 4, ... updates (the fair comparison: every method gets the same update budget)

A library module (no Streamlit): the page and `python -m k3lite.bench balance` both import it. Nothing
passed in is mutated: every method works on its own copy of the router, and the trained model is only
read through forward pre-hooks.
"""
from __future__ import annotations

import copy
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import NamedTuple, Sequence

import torch

from k3lite.model.config import BALANCING_METHODS, MoEConfig
from k3lite.model.trace import own_inputs
from k3lite.model.moe import (LatentMoE, Router, capacity_for, capacity_mask, routing_metrics, routing_stats,
                        selection_stability)
from k3lite.base.rng import seeded
from k3lite.base.wording import compare
from k3lite.base.tokenizer import token_label, validate_prompt

METHODS = tuple(BALANCING_METHODS)  # none, aux_loss, bias, quantile
UPDATE_COUNTS = (1, 2, 4, 8, 16, 32, 64)  # held-out violation is recorded after these many updates
DEFAULT_UPDATES = 32  # the update budget every method gets for the prompt (a) and the load bars (b)
MAX_PROMPT_BYTES = 256
STREAM_BYTES = 8_000  # 2,000 held out: ~18 assignments per expert at E = 896, top-k 8

# Held-in text for the calibration stream (our own words; ships with the code, no download).
CALIBRATION_TEXT = (
    "A mixture of experts replaces one large feed-forward block with many small ones and a router that "
    "sends each token to a few of them. The router is a single matrix: it scores every expert for every "
    "token, and the token goes to the experts with the highest scores. Left alone, the router quickly "
    "learns favourites. Common words such as the, of, and and a pull the same experts again and again, "
    "while rare words and numbers like 42, 1917 or 3.14 end up with experts nobody else uses. An expert "
    "that receives too many tokens becomes the slowest worker in the step, and an expert that receives "
    "none learns nothing. Balancing methods fight this in different ways. An auxiliary loss adds a "
    "penalty when the load is uneven and lets gradient descent sort it out. A bias term nudges the scores "
    "of busy experts down and idle experts up, a little every step. Quantile balancing grades on a curve: "
    "each expert sets its cut so that, on the batches seen so far, about its share of tokens ranks above "
    "it, and each token then picks its top experts after the cuts. When the experts live on different "
    "GPUs every routed token is a message on the wire, and the size of that message is the width of the "
    "vector we send. LatentMoE sends a smaller, compressed vector, so the same network can carry more "
    "experts per token. "
)


def calibration_stream() -> bytes:
    """CALIBRATION_TEXT followed by some Python source (STREAM_BYTES of text and code, shipped with the package:
    no download). The code part is frozen in k3lite/experiments/moe_demo_stream.txt (the start of the MoE module,
    then one file, as it was on 2026-12-03), so editing the model's MoE code no longer moves the demo's numbers."""
    code = (Path(__file__).resolve().parent / "moe_demo_stream.txt").read_bytes()
    return (CALIBRATION_TEXT.encode("utf-8") + code)[:STREAM_BYTES]


def check_prompt(prompt: str) -> bytes:
    """The prompt's UTF-8 bytes (one token per byte): the app's one prompt policy (`validate_prompt`) with this
    demo's length limit; ValueError naming the constraint."""
    return validate_prompt(prompt, max_bytes=MAX_PROMPT_BYTES)


# ------------------------------------------------------------------------------------ hidden states
def byte_features(data: bytes, dim: int, seed: int = 0, context: int = 4) -> torch.Tensor:
    """(T, dim) toy hidden states for a byte string: x_t = sum_{j<context} 0.5^j E[b_{t-j}] with a fixed
    random byte embedding E, a decaying bag of the last few bytes (so a common letter in different words
    gets different hidden states, as in a real model). Used when no trained model is passed."""
    g = torch.Generator().manual_seed(seed)
    table = torch.randn(256, dim, generator=g)  # (256, d)
    ids = torch.tensor(list(data), dtype=torch.long)
    x = table[ids].clone()  # (T, d)
    for j in range(1, context):
        x[j:] += 0.5**j * table[ids[:-j]]
    return x


def model_moe_inputs(model, data: bytes, chunk: int = 512) -> dict[int, torch.Tensor]:
    """{layer index: (T, d)} the normalised hidden state entering each MoE layer of a trained K3Model, for
    the bytes `data` (run in chunks of `chunk` tokens, each from a fresh context). Read with
    `k3lite.model.trace.own_inputs`: the model is not changed, and another session running the same cached
    model meanwhile adds nothing to this result."""
    if not data:
        raise ValueError("data must not be empty")
    moe = {layer.index: layer.ffn for layer in model.layers if isinstance(layer.ffn, LatentMoE)}
    if not moe:
        raise ValueError("this model has no MoE layer")
    with own_inputs(moe) as captured, torch.inference_mode():
        ids = list(data)
        for start in range(0, len(ids), chunk):
            model(torch.tensor([ids[start : start + chunk]]))
    return {i: torch.cat([p.reshape(-1, p.shape[-1]) for p in parts]).clone()  # (B*T, d); clone: leave
            for i, parts in captured.items()}  # inference mode


# ------------------------------------------------------------------------------------ calibration
def held_out_violation(router: Router, held: torch.Tensor, scores: torch.Tensor | None = None) -> float:
    """max(load)/mean(load) - 1 of `router`'s top-k choices on the held-out tokens `held` (M, d); `scores`: their
    raw scores (M, E) if already computed (the router's weights unchanged since)."""
    with torch.no_grad():
        scores = router.score(held) if scores is None else scores
        return routing_metrics(router.select(scores), router.cfg.n_routed_experts)[1]


class Calibration(NamedTuple):
    router: Router  # a copy of the router after all `steps` updates
    curve: dict  # {n: held-out max-violation after n updates} for n in record_at
    kept: dict  # {n: a copy of the router as it was after n updates} for n in keep_at


def calibrate(router: Router, stream: torch.Tensor, method: str, steps: int = 60, batch: int = 512,
              lr: float = 1e-3, seed: int = 0, held: torch.Tensor | None = None,
              record_at: Sequence[int] = (), keep_at: Sequence[int] = ()) -> Calibration:
    """Fit a copy of `router`'s balancing state on `stream` (M, d) with `steps` updates; record the held-out
    max-violation after each count in `record_at` (needs `held`) and keep a copy after each in `keep_at`.

    One update = one batch of `batch` random stream tokens. none: no change (the curve is flat).
    bias: one DeepSeek-V3 bias step (±gamma). quantile: one Quantile Balancing dual update (beta read off
    this batch). aux_loss: one Adam step (lr) on the router weights minimising the Switch aux loss *alone*:
    no task loss pulls back, so this is the penalty's balancing force at its best (the training run in
    k3lite.experiments.moe_balance shows it against a task loss); Adam is scale-free, so alpha does not matter.
    `router` itself is never changed.
    """
    if method not in METHODS:
        raise ValueError(f"balancing method must be one of {METHODS}, got {method!r}")
    if steps < 0 or any(n < 1 or n > steps for n in (*record_at, *keep_at)):
        raise ValueError(f"need steps >= 0 and every recorded or kept count in [1, steps], got {steps}, "
                         f"{list(record_at)}, {list(keep_at)}")
    if record_at and held is None:
        raise ValueError("record_at needs held-out tokens (held)")
    r = copy.deepcopy(router)
    r.cfg = replace(r.cfg, balancing=method)
    r.bias.zero_()
    r.weight.requires_grad_(method == "aux_loss")
    g = torch.Generator().manual_seed(seed)
    opt = torch.optim.Adam([r.weight], lr=lr) if method == "aux_loss" else None
    curve, kept = {}, {}
    if method == "none":  # nothing to fit: the same router after any number of updates
        level = held_out_violation(r, held) if record_at else 0.0
        return Calibration(r.requires_grad_(False), dict.fromkeys(record_at, level),
                           {n: copy.deepcopy(r) for n in keep_at})
    # bias / quantile leave the router's weights alone: score the stream and the held-out tokens once and pick
    # rows. BLAS does not promise a row's result is independent of the other rows; on this machine it is (the
    # shipped demo's hashes did not change, and tests/experiments/test_precomputed.py recomputes it)
    with torch.no_grad():
        stream_scores = r.score(stream) if opt is None else None  # (M, E)
        held_scores = r.score(held) if opt is None and record_at else None
    for step in range(1, steps + 1):
        rows = torch.randint(0, stream.shape[0], (batch,), generator=g)
        if opt is not None:
            with torch.enable_grad():
                loss = r(stream[rows].detach()).aux_loss
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
        else:
            r.update_balance(stream_scores[rows])  # quantile skips the selection it does not read
        if step in record_at:
            curve[step] = held_out_violation(r, held, held_scores)
        if step in keep_at:
            kept[step] = copy.deepcopy(r).requires_grad_(False)
    r.weight.requires_grad_(False)
    return Calibration(r, curve, kept)


class ExpertChoice(NamedTuple):
    """What expert-choice routing (each expert takes its top c = N k / E tokens of the batch) does to N tokens."""

    per_expert: int  # c: every expert gets exactly this many tokens (the load is even by construction)
    tokens: int  # N
    no_expert: int  # tokens no expert picked: they skip the MoE layer (only the residual carries them)
    under_k: int  # tokens picked by fewer than k experts (no_expert included)
    over_k: int  # tokens picked by more than k experts
    most: int  # the most experts any one token got


def expert_choice(scores: torch.Tensor, top_k: int) -> ExpertChoice:
    """Expert-choice routing (Zhou et al., arXiv 2202.09368) on scores (N, E): each expert takes the c = N k / E
    tokens that score highest for it *within this batch*. Exact balance, but it needs the whole batch before
    any token is routed, and a token gets 0, k or more experts depending on the others in the batch."""
    n, e = scores.shape
    c = n * top_k // e
    if c < 1:
        raise ValueError(f"expert choice needs N k / E >= 1 token per expert, got N {n}, k {top_k}, E {e}")
    chosen = scores.topk(c, dim=0).indices  # (c, E): each expert's tokens
    per_token = torch.bincount(chosen.reshape(-1), minlength=n)  # (N,) experts each token got
    return ExpertChoice(c, n, int((per_token == 0).sum()), int((per_token < top_k).sum()),
                        int((per_token > top_k).sum()), int(per_token.max()))


# ------------------------------------------------------------------------------------ the demo
class PromptDemo(NamedTuple):
    labels: list[str]  # one per prompt byte
    stats: dict  # method -> RoutingStats of the prompt through the layer with that method's router
    eval_load: dict  # method -> (E,) assignments on held-out stream tokens, after `updates` updates
    eval_violation: dict  # method -> max-violation on the held-out stream tokens, after `updates` updates
    stability: dict  # method -> selection_stability on the held-out tokens (score noise std 0.01)
    curves: dict  # method -> [held-out max-violation after n updates for n in update_counts]
    update_counts: tuple  # x axis of the curves
    updates: int  # the update budget every method got for stats / eval_load / eval_violation
    untrained_violation: float  # held-out max-violation with no balancing at all (update 0 for every method)
    expert_choice: ExpertChoice  # expert-choice routing of the same held-out tokens by the same (raw) scores
    eval_tokens: int
    fit_tokens: int
    batch: int  # stream tokens per update


def seeded_layer(cfg: MoEConfig, d_model: int, seed: int) -> LatentMoE:
    """A fresh frozen LatentMoE with the weights `seed` gives (the same for every call), balancing "none"."""
    with seeded(seed):
        return LatentMoE(d_model, replace(cfg, balancing="none")).requires_grad_(False)


def routing_cfg(cfg: MoEConfig) -> MoEConfig:
    """`cfg` with fields the routing fit does not read set to a fixed value: the balancing method (every method
    is fitted), the latent and the number of shared experts (the other sizes stay in the key; the page never
    changes them). The router's weights come from the seed alone (`seeded_router`), so two configs with the
    same `routing_cfg` get the same fit: the key under which a page caches it."""
    return replace(cfg, balancing="none", latent_dim=0, latent_norm=False, n_shared_experts=0)


def seeded_router(cfg: MoEConfig, d_model: int, seed: int) -> Router:
    """The router of `seeded_layer(cfg, d_model, seed)` (LatentMoE builds it first: the same first draws), drawn
    from a private generator: a server's other threads may reseed or draw from torch's global generator at any
    moment (a fit is cached for every session, so a shifted draw would stay), and building the whole layer only
    for its router allocated every expert's weights (~44 MB at E = 896)."""
    with torch.device("meta"):
        router = Router(d_model, replace(cfg, balancing="none"))
    router = router.to_empty(device="cpu")
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        router.weight.normal_(0.0, d_model**-0.5, generator=g)  # Router.__init__'s nn.init.normal_, same numbers
        router.bias.zero_()
    return router.requires_grad_(False)


class BalanceFit(NamedTuple):
    """Every balancing method fitted on the calibration stream (`fit_balancers`): what does not depend on the
    prompt, the latent or the shared experts."""

    cfg: MoEConfig  # routing_cfg of the config it was fitted for
    seed: int
    routers: dict  # method -> Router after `updates` updates (never mutated by its users)
    eval_load: dict
    eval_violation: dict
    stability: dict
    curves: dict
    update_counts: tuple
    updates: int
    untrained_violation: float
    expert_choice: ExpertChoice
    eval_tokens: int
    fit_tokens: int
    batch: int


def fit_balancers(cfg: MoEConfig, d_model: int, seed: int = 0, stream_x: torch.Tensor | None = None,
                  updates: int = DEFAULT_UPDATES, update_counts: Sequence[int] = UPDATE_COUNTS,
                  threads: int = 1) -> BalanceFit:
    """Fit each balancing method's state on the first 3/4 of the stream (`calibrate`) and measure it on the
    remaining quarter (tokens the balancer did not see). Hidden states: `stream_x` (L, d) for
    `calibration_stream()`, e.g. the trained model's (`model_moe_inputs`); by default `byte_features`.
    Reads only `routing_cfg(cfg)`. `threads` > 1 fits the methods side by side (the same result)."""
    counts = tuple(sorted(set(update_counts)))
    if updates not in counts:
        raise ValueError(f"updates ({updates}) must be one of the recorded counts {list(counts)}")
    cfg = routing_cfg(cfg)
    feats = byte_features(calibration_stream(), d_model, seed) if stream_x is None else stream_x  # (L, d)
    if feats.shape[-1] != d_model:
        raise ValueError(f"hidden states must be (L, {d_model}), got {tuple(feats.shape)}")
    split = 3 * feats.shape[0] // 4
    fit, held = feats[:split], feats[split:]
    base = seeded_router(cfg, d_model, seed)
    # quantile needs >= 1 token per expert per batch (N k / E >= 1); aim for ~4
    batch = min(2048, max(512, -(-4 * cfg.n_routed_experts // cfg.top_k)))
    def one(method: str):
        fitted = calibrate(base, fit, method, steps=counts[-1], batch=batch, seed=seed, held=held,
                           record_at=counts, keep_at=(updates,))
        router = fitted.kept[updates]
        if method != "aux_loss":  # only the aux loss moves the weights: share the base's (a cached fit is ~2x smaller)
            router.weight = base.weight
        with torch.no_grad():  # what router(held) selects, scored once for the load and the flips
            scores = router.score(held)  # (M, E)
            chosen = router.select(scores)  # (M, k)
        load, v, _, _ = routing_metrics(chosen, cfg.n_routed_experts)
        flips = selection_stability(router, held, eps=0.01, seed=seed, scores=scores, chosen=chosen)
        return router, [fitted.curve[n] for n in counts], load.tolist(), v, flips

    # the methods are independent (each its own copy of the router and its own seeded generator) and their time
    # is in torch ops that release the GIL, so on a multi-core server they run side by side: the same numbers
    # sooner (threads=1 runs them one after another)
    if threads > 1:
        with ThreadPoolExecutor(max_workers=min(threads, len(METHODS))) as pool:
            done = dict(zip(METHODS, pool.map(one, METHODS)))
    else:
        done = {m: one(m) for m in METHODS}
    routers, curves, loads, viol, stab = ({m: done[m][i] for m in METHODS} for i in range(5))
    return BalanceFit(cfg, seed, routers, loads, viol, stab, curves, counts, updates, held_out_violation(base, held),
                      expert_choice(base.score(held), cfg.top_k), held.shape[0], fit.shape[0], batch)


def prompt_demo(cfg: MoEConfig, d_model: int, prompt: str, seed: int = 0, stream_x: torch.Tensor | None = None,
                prompt_x: torch.Tensor | None = None, updates: int = DEFAULT_UPDATES,
                update_counts: Sequence[int] = UPDATE_COUNTS, fit: BalanceFit | None = None) -> PromptDemo:
    """Route a prompt through a seeded LatentMoE under each balancing method, every method fitted with
    the same number of updates (`fit_balancers`; pass `fit` to reuse one made with the same `routing_cfg`,
    seed and stream).

    Hidden states: `stream_x` (L, d) for `calibration_stream()` and `prompt_x` (T, d) for the prompt, e.g.
    the trained model's (`model_moe_inputs`); by default `byte_features` (a fixed random embedding).
    """
    data = check_prompt(prompt)
    if prompt_x is None:
        prompt_x = byte_features(data, d_model, seed)  # (T, d): the prompt on its own (no leading context)
    if prompt_x.shape != (len(data), d_model):
        raise ValueError(f"hidden states must be ({len(data)}, {d_model}), got {tuple(prompt_x.shape)}")
    if fit is None:
        fit = fit_balancers(cfg, d_model, seed, stream_x, updates, update_counts)
    elif fit.updates != updates or fit.cfg != routing_cfg(cfg) or fit.seed != seed:
        raise ValueError("the fit passed was made for another routing config, seed or update budget")
    # the panel shows the routing only: what LatentMoE.forward would report with this router (`routing_stats`),
    # without running the experts, whose output nothing here reads. The fitted router is only read (its cfg is the
    # routing_cfg with balancing = method: the fields a Router reads are the page's)
    capacity = capacity_for(len(data), cfg.top_k, cfg.n_routed_experts, cfg.capacity_factor)
    stats = {}
    for method in METHODS:
        with torch.inference_mode():
            route = fit.routers[method](prompt_x)  # (T, d) -> flat (T, k) / (T, E)
            dropped = int((~capacity_mask(route.topk_idx, cfg.n_routed_experts, capacity)).sum())
        stats[method] = routing_stats(route, (1, len(data)), cfg.n_routed_experts, dropped, cfg.latent_dim or d_model)
    return PromptDemo([token_label(b) for b in data], stats, fit.eval_load, fit.eval_violation, fit.stability,
                      fit.curves, fit.update_counts, fit.updates, fit.untrained_violation, fit.expert_choice,
                      fit.eval_tokens, fit.fit_tokens, fit.batch)


# ------------------------------------------------------------------------------------ the claim
def first_budget_below(curve: Sequence[float], counts: Sequence[int], threshold: float) -> int | None:
    """The smallest update count whose held-out violation is <= threshold, or None if none is."""
    return next((n for n, v in zip(counts, curve) if v <= threshold), None)


def updates_to_even(demo: PromptDemo) -> tuple[float, dict[str, int | None]]:
    """(threshold, {method: first update count with held-out violation <= threshold, or None}) for the
    balancing methods, threshold = 1.5x their median violation after the largest budget."""
    counts = demo.update_counts
    balancers = [m for m in demo.curves if m != "none"]
    final = sorted(demo.curves[m][-1] for m in balancers)
    threshold = 1.5 * final[len(final) // 2]
    return threshold, {m: first_budget_below(demo.curves[m], counts, threshold) for m in balancers}


def fastest(reach: dict[str, int | None]) -> list[str]:
    """The methods that reach the threshold in the fewest updates (several on a tie; none if none reach it)."""
    done = [n for n in reach.values() if n is not None]
    return [m for m, n in reach.items() if done and n == min(done)]


def balance_claim(demo: PromptDemo, names: dict[str, str] | None = None) -> str:
    """The page's sentence on how the balancing methods compare, built from the demo's own curves.

    Speed: the first budget at which each method's held-out violation is within 1.5x of the methods'
    median after the largest budget. Level: the range the methods span from the bars' budget on, and
    whether one of them is lowest at every one of those budgets.
    """
    names = names or {}
    counts, budget = demo.update_counts, demo.updates
    balancers = [m for m in demo.curves if m != "none"]
    threshold, reach = updates_to_even(demo)
    order = sorted(balancers, key=lambda m: (reach[m] is None, reach[m] or 0))

    def when(m: str) -> str:
        n = reach[m]
        return f"not within {counts[-1]} updates" if n is None else f"{n} update{'s' * (n != 1)}"

    speed = "; ".join(f"{names.get(m, m)}: {when(m)}" for m in order)
    late = [i for i, n in enumerate(counts) if n >= budget]
    values = [demo.curves[m][i] for m in balancers for i in late]
    # lowest at a budget = equal to the minimum as shown (2 decimals): ties are shared
    shown_min = {i: round(min(demo.curves[m][i] for m in balancers), 2) for i in late}
    winners = [[m for m in balancers if round(demo.curves[m][i], 2) == shown_min[i]] for i in late]
    always = [m for m in balancers if all(m in w for w in winners)]
    if always:
        level = (" and ".join(names.get(m, m) for m in always) + (" is" if len(always) == 1 else " are")
                 + " lowest at every one of these budgets")
    else:
        level = ("which one is lowest changes with the budget (" + ", ".join(
            f"{counts[i]}: {' = '.join(names.get(m, m) for m in w)}" for i, w in zip(late, winners))
            + "), so at equal budgets none of them is reliably ahead on these held-out tokens")
    return (f"With no balancing the held-out max-violation is {demo.untrained_violation:.2f}. Updates needed to get "
            f"below {threshold:.2f} (1.5x the methods' median after {counts[-1]} updates): {speed}. From "
            f"{budget} updates on (the bars give every method {budget}) all three stay between {min(values):.2f} "
            f"and {max(values):.2f}, and {level}.")


def notice_lines(demo: PromptDemo, names: dict[str, str] | None = None) -> tuple[str, str]:
    """The page's two "what to notice" sentences about (b), each built from the demo's numbers. The speed sentence
    says what the threshold means as a load (max-violation v = the busiest expert at 1 + v times its share), not
    "close to even": the threshold is relative to the methods' own median, so it can be far from even."""
    names = names or {}
    threshold, reach = updates_to_even(demo)
    quick = fastest(reach)
    if quick:
        n = reach[quick[0]]
        speed = (f"{' and '.join(names.get(m, m) for m in quick)} need{'s' * (len(quick) == 1)} the fewest updates, "
                 f"{n}, to bring the busiest expert under {1 + threshold:.1f}x the ideal load (max-violation "
                 f"{threshold:.2f}, 1.5x the methods' median after {demo.update_counts[-1]} updates; the curve under (b))")
    else:
        speed = (f"no method brings the busiest expert under {1 + threshold:.1f}x the ideal load within "
                 f"{demo.update_counts[-1]} updates (the curve under (b))")
    first = (f"Raw top-k (*none*) piles tokens onto favourites: on the held-out bytes in (b) its busiest expert gets "
             f"{1 + demo.eval_violation['none']:.1f}x the ideal load. {speed[0].upper() + speed[1:]}.")
    flips = ", ".join(f"{names.get(m, m)} {100 * v:.1f}%" for m, v in demo.stability.items())
    raw = demo.stability["none"]
    by_word: dict[str, list[str]] = {}
    for m, v in demo.stability.items():
        if m != "none":
            by_word.setdefault(compare(v, raw, "more", "less", "as"), []).append(names.get(m, m))
    against = "; ".join(f"{' and '.join(ms)} flipped {word} often {'as' if word == 'as' else 'than'} raw top-k"
                        for word, ms in by_word.items())
    second = (f"Selections flipped by score noise in (b): {flips}. Balancing moves choices closer to ties, where noise "
              f"flips them: the sensitivity a *Stable* MoE has to keep in check; here {against}.")
    return first, second
