"""One figure per distinct input, shared by every session of a server.

A page rerun rebuilds every figure on the page although one control moved, and building a plotly figure is
Python work under the GIL (make_subplots, add_hline, update_layout walk plotly's validators): on the routing
page about 0.2 s of a rerun, the same for every visitor at the same settings. `shared_figure(builder, *args)`
builds each distinct (builder, arguments) once and hands the same figure back afterwards.

    st.plotly_chart(shared_figure(load_bars, loads, violations), width="stretch")

The key is the builder and a frozen copy of its arguments (`freeze`: numbers and strings with their type, numpy
arrays and tensors by dtype, shape and bytes, lists, dicts, named tuples and dataclasses field by field), so
equal inputs share a figure and any changed element builds a new one. A builder that is not a module-level
function (a lambda, a function defined inside another) or an argument of another kind builds the figure every
time, uncached. Either way the figure gets the app's legend placement (`style.legend_below`: horizontal,
under the plot, for phones), and `evidence=` (an Evidence; `evidence_by_name=` a dict trace name -> Evidence for the
traces that differ) tags every trace's hover with its evidence class (`k3lite.viz.evidence.with_evidence`): both are
taken by the memo, part of the key, never passed to the builder. The figure returned is shared: read it (st.plotly_chart only calls
`to_dict()`), never mutate it. A builder must be a pure function of its arguments.

The memo is bounded twice: at most `max_entries` figures, and at most `max_bytes` of the numbers and strings they
hold (`content_bytes`, frames included), evicting the least recently used first. The count alone bounded little:
one KDA state animation holds ~0.4-0.8 MB of numbers in its frames (~3-4 MB of the server's RSS as plotly
objects), so 256 of them, which a class typing its own prompts makes, could hold ~1 GB.
"""
from __future__ import annotations

import dataclasses
import enum
import threading
from collections import OrderedDict
from typing import Any, Callable

import numpy as np
import torch
from plotly.basedatatypes import BaseFigure

from k3lite.viz.evidence import with_evidence
from k3lite.viz.style import legend_below

MAX_FIGURES = 256
MAX_BYTES = 24_000_000  # content_bytes of all figures held: ~40 of the largest KDA animations, ~100-200 MB of RSS


class FigureMemo:
    """A thread-safe LRU of built figures keyed by (builder, frozen args, frozen kwargs)."""

    def __init__(self, max_entries: int = MAX_FIGURES, max_bytes: int = MAX_BYTES):
        if max_entries < 1:
            raise ValueError(f"max_entries must be >= 1, got {max_entries}")
        if max_bytes < 1:
            raise ValueError(f"max_bytes must be >= 1, got {max_bytes}")
        self.max_entries, self.max_bytes = max_entries, max_bytes
        self._figures: OrderedDict[tuple, tuple[Any, int]] = OrderedDict()  # key -> (figure, its content_bytes)
        self.bytes = 0  # content_bytes of the figures held
        self._lock = threading.Lock()
        self.hits = self.misses = self.uncached = 0

    @staticmethod
    def key(builder: Callable, args: tuple, kwargs: dict) -> tuple | None:
        """(builder, frozen arguments), or None when the figure must not be cached: a builder without a stable
        module-level name (two lambdas could share one), or an argument `freeze` does not know."""
        name = getattr(builder, "__qualname__", "<lambda>")
        if "<" in name:  # <lambda>, <locals>: made anew on every run
            return None
        try:
            return builder, freeze(args), freeze(sorted(kwargs.items()))
        except TypeError:
            return None

    def __call__(self, builder: Callable, *args, evidence=None, evidence_by_name=None, **kwargs):
        key = self.key(builder, args, {**kwargs, "__evidence": (evidence, evidence_by_name)})

        def build():
            fig = legend_below(builder(*args, **kwargs))
            return with_evidence(fig, evidence, evidence_by_name) if evidence is not None else fig

        if key is None:
            self.uncached += 1
            return build()
        with self._lock:
            held = self._figures.get(key)
            if held is not None:
                self._figures.move_to_end(key)
                self.hits += 1
                return held[0]
        # outside the lock: two sessions may build the same figure once each. Every figure gets the app's legend
        # placement here (under the plot: the one mechanism for phones, k3lite.viz.style.legend_below)
        fig = build()
        size = content_bytes(fig)  # ~1 ms for a 0.5 MB animation (serializing it would take ~25 ms)
        with self._lock:
            self.misses += 1
            if key in self._figures:  # another session built it meanwhile
                self.bytes -= self._figures[key][1]
            self._figures[key] = (fig, size)
            self._figures.move_to_end(key)
            self.bytes += size
            # the newest figure always stays (a single figure over the budget is still shown, just not kept long)
            while len(self._figures) > 1 and (len(self._figures) > self.max_entries or self.bytes > self.max_bytes):
                self.bytes -= self._figures.popitem(last=False)[1][1]
        return fig

    def __len__(self) -> int:
        return len(self._figures)


def content_bytes(obj: Any) -> int:
    """About the bytes of numbers and strings a figure holds (its traces, layout and frames; 8 per number and per
    container slot, arrays by nbytes): a cheap walk of plotly's own plain-dict store, within ~1.5x of the figure's
    JSON. Any other object is walked as it is."""
    if isinstance(obj, BaseFigure):  # plotly 7.1 keeps a figure's content as plain dicts and lists
        return (_walk(obj._data) + _walk(obj._layout)
                + sum(_walk(frame._props) for frame in obj._frame_objs))
    return _walk(obj)


def _walk(value: Any) -> int:
    if isinstance(value, dict):
        return 8 * len(value) + sum(_walk(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return 8 * len(value) + sum(_walk(v) for v in value)
    if isinstance(value, np.ndarray):
        return int(value.nbytes) if value.dtype != object else 8 * value.size + sum(_walk(v) for v in value.ravel())
    if isinstance(value, (str, bytes)):
        return len(value)
    return 8


def freeze(value: Any) -> Any:
    """A hashable copy of `value` that equals another's exactly when the two hold the same values of the same
    types (1, 1.0 and True differ; an array's dtype and shape count). TypeError for a kind it does not know."""
    if value is None or isinstance(value, (bool, int, float, complex, str, bytes)):
        return type(value).__name__, value
    if isinstance(value, np.ndarray):
        if value.dtype.hasobject:  # the bytes would be pointers
            raise TypeError("object arrays are not frozen")
        return "ndarray", value.dtype.str, value.shape, value.tobytes()
    if isinstance(value, np.generic):
        return "numpy", value.dtype.str, value.tobytes()
    if isinstance(value, torch.Tensor):
        flat = value.detach().cpu().contiguous().reshape(-1)
        return "tensor", str(value.dtype), tuple(value.shape), flat.view(torch.uint8).numpy().tobytes()
    if isinstance(value, enum.Enum):
        return type(value).__module__, type(value).__qualname__, value.name
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # a NamedTuple: its type and fields
        return type(value).__module__, type(value).__qualname__, tuple(freeze(v) for v in value)
    if type(value) in (tuple, list):
        return type(value).__name__, tuple(freeze(v) for v in value)
    if type(value) in (set, frozenset):
        return "set", frozenset(freeze(v) for v in value)
    if type(value) is dict:
        return "dict", tuple((freeze(k), freeze(v)) for k, v in value.items())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return (type(value).__module__, type(value).__qualname__,
                tuple((f.name, freeze(getattr(value, f.name))) for f in dataclasses.fields(value)))
    raise TypeError(f"cannot freeze a {type(value).__qualname__}")


shared_figure = FigureMemo()  # the server's one memo (a module global: one per process, like st.cache_resource)
