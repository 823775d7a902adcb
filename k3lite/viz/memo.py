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
under the plot, for phones). The figure returned is shared: read it (st.plotly_chart only calls
`to_dict()`), never mutate it. A builder must be a pure function of its arguments.
"""
from __future__ import annotations

import dataclasses
import enum
import threading
from collections import OrderedDict
from typing import Any, Callable

import numpy as np
import torch

from k3lite.viz.style import legend_below

MAX_FIGURES = 256  # a few MB: the largest figures (heatmaps) hold a few hundred kB of numbers


class FigureMemo:
    """A thread-safe LRU of built figures keyed by (builder, frozen args, frozen kwargs)."""

    def __init__(self, max_entries: int = MAX_FIGURES):
        if max_entries < 1:
            raise ValueError(f"max_entries must be >= 1, got {max_entries}")
        self.max_entries = max_entries
        self._figures: OrderedDict[tuple, Any] = OrderedDict()
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

    def __call__(self, builder: Callable, *args, **kwargs):
        key = self.key(builder, args, kwargs)
        if key is None:
            self.uncached += 1
            return legend_below(builder(*args, **kwargs))
        with self._lock:
            fig = self._figures.get(key)
            if fig is not None:
                self._figures.move_to_end(key)
                self.hits += 1
                return fig
        # outside the lock: two sessions may build the same figure once each. Every figure gets the app's legend
        # placement here (under the plot: the one mechanism for phones, k3lite.viz.style.legend_below)
        fig = legend_below(builder(*args, **kwargs))
        with self._lock:
            self.misses += 1
            self._figures[key] = fig
            self._figures.move_to_end(key)
            while len(self._figures) > self.max_entries:
                self._figures.popitem(last=False)
        return fig

    def __len__(self) -> int:
        return len(self._figures)


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
