"""One figure per distinct input, shared by every session of a server.

A page rerun rebuilds every figure on the page although one control moved, and building a plotly figure is
Python work under the GIL (make_subplots, add_hline, update_layout walk plotly's validators): on the routing
page about 0.2 s of a rerun, the same for every visitor at the same settings. `shared_figure(builder, *args)`
builds each distinct (builder, arguments) once and hands the same figure back afterwards.

    st.plotly_chart(shared_figure(load_bars, loads, violations), width="stretch")

The key is the pickle of the builder (by its importable name) and arguments (numpy arrays and tensors by their bytes), so equal
inputs share a figure and any changed element builds a new one. Arguments that cannot be pickled (a lambda)
build the figure every time, uncached. The figure returned is shared: read it (st.plotly_chart only calls
`to_dict()`), never mutate it. A builder must be a pure function of its arguments.
"""
from __future__ import annotations

import hashlib
import pickle
import threading
from collections import OrderedDict
from typing import Any, Callable

MAX_FIGURES = 256  # a few MB: the largest figures (heatmaps) hold a few hundred kB of numbers


class FigureMemo:
    """A thread-safe LRU of built figures keyed by a digest of (builder, args, kwargs)."""

    def __init__(self, max_entries: int = MAX_FIGURES):
        if max_entries < 1:
            raise ValueError(f"max_entries must be >= 1, got {max_entries}")
        self.max_entries = max_entries
        self._figures: OrderedDict[bytes, Any] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = self.misses = self.uncached = 0

    @staticmethod
    def key(builder: Callable, args: tuple, kwargs: dict) -> bytes | None:
        """A digest of the builder and its arguments, or None if they cannot be pickled. pickle names a function by
        module and qualified name after checking that the name leads back to this very function, so a lambda or a
        function defined inside another (two of which could share a name) is never cached."""
        try:
            blob = pickle.dumps((builder, args, sorted(kwargs.items())), protocol=pickle.HIGHEST_PROTOCOL)
        except (pickle.PicklingError, TypeError, AttributeError):
            return None
        return hashlib.blake2b(blob, digest_size=20).digest()

    def __call__(self, builder: Callable, *args, **kwargs):
        key = self.key(builder, args, kwargs)
        if key is None:
            self.uncached += 1
            return builder(*args, **kwargs)
        with self._lock:
            fig = self._figures.get(key)
            if fig is not None:
                self._figures.move_to_end(key)
                self.hits += 1
                return fig
        fig = builder(*args, **kwargs)  # outside the lock: two sessions may build the same figure once each
        with self._lock:
            self.misses += 1
            self._figures[key] = fig
            self._figures.move_to_end(key)
            while len(self._figures) > self.max_entries:
                self._figures.popitem(last=False)
        return fig

    def __len__(self) -> int:
        return len(self._figures)


shared_figure = FigureMemo()  # the server's one memo (a module global: one per process, like st.cache_resource)
