"""The MoE page's live computations and their server-wide caches, without Streamlit.

views/moe.py was holding the caches, the warm-up thread and the thread-count logic itself; they live here so the
page is widgets -> one call per panel -> figure, and the same functions run from a test or a CLI.

Every cache is shared by all sessions of a server, bounded (`maxsize`, docs/performance.md's memory bound: the largest
entries are a fitted router set, ~1 MB at E = 896) and computes each key once even when several sessions ask at
the same moment (a per-key lock). What they return is shared: callers read it, never mutate it.
"""
from __future__ import annotations

import os
import threading
from collections import OrderedDict
from dataclasses import replace
from functools import wraps
from typing import Callable

import torch

from k3lite.model.checkpoint import load_lite_model
from k3lite.model.config import MoEConfig
from k3lite.base.guards import heavy_work
from k3lite.experiments.moe_balance import run_balance
from k3lite.analytic.placement import chance_violation, mean_load_per_expert
from k3lite.experiments.moe_demo import (PromptDemo, calibration_stream, check_prompt, fit_balancers, model_moe_inputs,
                             prompt_demo, routing_cfg)
from k3lite.experiments.precomputed import BALANCE_ARGS, MOE_LAYER, MOE_PROMPT, moe_page_cfg, shipped

WARMUP_THREAD = "k3lite-moe-warmup"


def fit_threads() -> int:
    """Threads for fitting the balancing methods side by side: at most 3, never more than the server's cores
    (2 cores: 2.9 -> 1.7 s at E 896, top-16; the same numbers as one thread)."""
    return min(3, os.cpu_count() or 1)


# ------------------------------------------------------------------------------------------ one shared cache
_ALL: list["SharedCache"] = []


class SharedCache:
    """A thread-safe LRU of results keyed by the call's arguments (hashable), each computed once."""

    def __init__(self, fn: Callable, maxsize: int):
        self.fn, self.maxsize = fn, maxsize
        self._results: OrderedDict = OrderedDict()
        self._locks: dict = {}
        self._lock = threading.Lock()
        wraps(fn)(self)
        _ALL.append(self)

    def __call__(self, *args):
        with self._lock:
            if args in self._results:
                self._results.move_to_end(args)
                return self._results[args]
            key_lock = self._locks.setdefault(args, threading.Lock())
        with key_lock:  # one computation per key; the others wait for it
            with self._lock:
                if args in self._results:
                    return self._results[args]
            try:
                value = self.fn(*args)
            except BaseException:
                with self._lock:
                    self._locks.pop(args, None)
                raise
            with self._lock:
                self._results[args] = value
                self._locks.pop(args, None)
                while len(self._results) > self.maxsize:
                    self._results.popitem(last=False)
        return value

    def cached(self, *args) -> bool:
        with self._lock:
            return args in self._results

    def clear(self) -> None:
        with self._lock:
            self._results.clear()

    def __len__(self) -> int:
        return len(self._results)


def shared(maxsize: int):
    return lambda fn: SharedCache(fn, maxsize)


def clear_all() -> None:
    """Forget every cached result (tests; a fresh server starts empty anyway)."""
    for cache in _ALL:
        cache.clear()
    _warmup.clear()


# ------------------------------------------------------------------------------------------ the model and its states
@shared(maxsize=1)
def lite_model():
    """(model, warning or None): the trained lite model, read through hooks only, never mutated."""
    return load_lite_model()


@shared(maxsize=1)
def stream_states() -> dict:
    """{layer: (L, d)} the calibration text's hidden states entering every MoE layer (one model pass)."""
    return model_moe_inputs(lite_model()[0], calibration_stream())


_warmup: list[threading.Thread] = []
_warmup_lock = threading.Lock()


def is_exiting(e: BaseException) -> bool:
    """Whether `e` is a thread pool refusing work because the interpreter is shutting down (a warm-up thread
    caught at exit), rather than a real error."""
    return (isinstance(e, RuntimeError) and "interpreter shutdown" in str(e)) or not threading.main_thread().is_alive()


def warm_stream_states() -> threading.Thread:
    """Once per server, when the page is first opened: compute the other layers' calibration states in the
    background, so a visitor's first layer change finds them ready instead of paying a whole-model pass over the
    stream (up to 7 s under a class's load, `bench load`), and warm torch's autograd for the aux-loss fit. The
    default layer's states are shipped."""
    with _warmup_lock:
        if _warmup:
            return _warmup[0]

        def warm_all():
            states = stream_states()
            # torch's first autograd + Adam step in a process costs ~1 s once: pay it here, not in a visitor's rerun
            fit_balancers(MoEConfig(n_routed_experts=8, top_k=2, expert_ffn_dim=8), states[MOE_LAYER].shape[-1],
                          stream_x=states[MOE_LAYER][:512], updates=1, update_counts=(1,))
            for cfg in neighbours_of_default():  # a first step of the E or top-k slider finds its answer ready
                if not threading.main_thread().is_alive():
                    return  # the process is exiting (its thread pools refuse new work): leave the rest unfitted
                demo(cfg, MOE_PROMPT, MOE_LAYER)

        def warm():
            try:
                warm_all()
            except RuntimeError as e:
                # "cannot schedule new futures after interpreter shutdown": the process is exiting mid-fit. Python
                # runs its thread-pool shutdown hook before it marks the main thread stopped, so the message, not
                # main_thread().is_alive(), is what tells this apart from a real error
                if is_exiting(e):
                    return
                raise

        # not a daemon: a process that exits mid-warm-up waits a few seconds rather than killing a thread inside
        # torch (which aborts the process: "terminate called without an active exception")
        thread = threading.Thread(target=warm, name=WARMUP_THREAD, daemon=False)  # else inherited (True)
        thread.start()
        _warmup.append(thread)
        return thread


def neighbours_of_default() -> list[MoEConfig]:
    """The page's default MoE with one more or one fewer expert, and top-k one up or down: the settings one
    keyboard step of its sliders reaches (each ~1 s to fit on a 2-core server, so they are fitted ahead)."""
    base = moe_page_cfg(lite_model()[0].cfg.d_model)
    return [replace(base, n_routed_experts=base.n_routed_experts + step) for step in (-1, 1)] + \
           [replace(base, top_k=base.top_k + step) for step in (-1, 1) if 1 <= base.top_k + step]


def stream_state(layer: int) -> torch.Tensor:
    """(L, d) hidden states of the calibration text at `layer`: shipped for the default layer (the same numbers,
    made by `python -m k3lite.experiments.precomputed`), else computed once per server."""
    shipped_x = shipped("moe_stream_layer4") if layer == MOE_LAYER and not lite_model()[1] else None
    return shipped_x if shipped_x is not None else stream_states()[layer]


# ------------------------------------------------------------------------------------------ panels (a)-(c)
def demo_is_shipped(cfg: MoEConfig, prompt: str, layer: int) -> bool:
    model, warning = lite_model()
    return (not warning and (cfg, prompt, layer) == (moe_page_cfg(model.cfg.d_model), MOE_PROMPT, MOE_LAYER)
            and shipped("moe_demo_page") is not None)


@shared(maxsize=64)
def balance_fit(rcfg: MoEConfig, layer: int):
    """Every method's fitted router: only the routing fields (`routing_cfg`: experts, top-k) and the layer key it,
    so moving the latent, the shared experts, the method or the prompt reuses it. 64 entries: two per visitor of
    a class of 30 (~1 MB each at E = 896)."""
    model, _ = lite_model()
    return fit_balancers(rcfg, model.cfg.d_model, stream_x=stream_state(layer), threads=fit_threads())


@shared(maxsize=64)
def prompt_states(prompt: str) -> dict:
    """{layer: (T, d)} the prompt's hidden states entering each MoE layer: one model pass per prompt, shared by
    every (experts, top-k, layer) the page then routes it under."""
    return model_moe_inputs(lite_model()[0], check_prompt(prompt))


@shared(maxsize=24)
def demo(cfg: MoEConfig, prompt: str, layer: int) -> PromptDemo:
    """The (a)-(c) demo. Every method is fitted and shown whatever `cfg.balancing` says (pass the default's, so
    the method selector only picks which one (a) shows)."""
    model, _ = lite_model()
    if demo_is_shipped(cfg, prompt, layer):
        return shipped("moe_demo_page")  # the page's defaults, computed by `python -m k3lite.experiments.precomputed`
    prompt_x = prompt_states(prompt)[layer]  # (T, d)
    return prompt_demo(cfg, model.cfg.d_model, prompt, prompt_x=prompt_x, fit=balance_fit(routing_cfg(cfg), layer))


def demo_ready(cfg: MoEConfig, prompt: str, layer: int) -> bool:
    """Whether `demo` answers at once (cached or shipped), so the page can say it is computing otherwise."""
    return demo.cached(cfg, prompt, layer) or demo_is_shipped(cfg, prompt, layer)


@shared(maxsize=24)
def own_routing(prompt: str, layer: int):
    """The trained model's own router on the prompt: (top-k ids, weights, max-violation) at `layer`."""
    model, _ = lite_model()
    with torch.inference_mode():
        lt = model(torch.tensor([list(check_prompt(prompt))]), trace=True).trace.layers[layer]
    return lt.router_topk_idx[0].numpy(), lt.router_topk_weight[0].numpy(), lt.load_max_violation


@shared(maxsize=1)
def balance_runs():
    """(runs, shipped?): the (c) experiment, shipped (run_balance(**BALANCE_ARGS), made by
    `python -m k3lite.experiments.precomputed`) or trained here once."""
    runs = shipped("moe_balance_runs")
    if runs is not None:
        return runs, True
    with heavy_work("the balancing experiment"):
        return run_balance(**BALANCE_ARGS), False


# ------------------------------------------------------------------------------------------ reading the numbers
def violation_reading(demo: PromptDemo, method: str, names: dict[str, str] | None = None) -> str:
    """What the held-out max-violation of `method` means, in words built from the demo: the busiest expert's load
    against the even share, against what a perfectly fair random router reads on as many tokens
    (`placement.chance_violation`), and how many assignments per expert each balancing update sees."""
    names = names or {}
    load = demo.eval_load[method]
    n_experts, top_k = len(load), round(int(sum(load)) / demo.eval_tokens)
    v, mean = demo.eval_violation[method], mean_load_per_expert(demo.eval_tokens, top_k, n_experts)
    chance = chance_violation(demo.eval_tokens, top_k, n_experts)
    per_batch = mean_load_per_expert(demo.batch, top_k, n_experts)
    ratio = (1 + v) / (1 + chance)
    versus = ("as even as chance allows on this many tokens" if ratio <= 1.1 else
              f"{ratio:.1f}x the busiest load a fair random router would give ({1 + chance:.2f}x the even share, "
              f"max-violation {chance:.2f})")
    seen = (f"each of the {demo.updates} balancing updates saw a batch of {demo.batch:,} bytes, {per_batch:.1f} "
            "assignments per expert")
    batch_note = ("" if method == "none" else
                  f" The balancer had no more to go on: {seen}" + (", too few to read each expert's share reliably."
                                                                  if per_batch < 20 else "."))
    return (f"{names.get(method, method)}: max-violation {v:.2f} means the busiest of the {n_experts} experts got "
            f"{1 + v:.2f}x the even share of {mean:.1f} assignments ({demo.eval_tokens:,} held-out bytes x top-"
            f"{top_k}); that is {versus}.{batch_note}")
