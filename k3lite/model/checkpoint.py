"""Save / load the shipped lite checkpoint (safetensors: no pickle, nothing executable in the file).

Weights are stored in bf16 (7.2M parameters -> ~14 MB, under the 20 MB asset limit); tensors smaller
than 4096 elements (norm gains, router balancing state, gate biases) stay fp32. The config travels
in the file's metadata, so a checkpoint always rebuilds the model it was trained as.

`load_lite_model(path=None) -> (model, warning_or_None)`: a missing or corrupt file never crashes;
it returns a randomly initialised model and a warning string the page shows. The training facts stored
with the weights (steps, validation loss) are read by `checkpoint_meta(path)`, not attached to the module.
"""
from __future__ import annotations

import json
from pathlib import Path

import torch
from safetensors import safe_open
from safetensors.torch import save_file

from k3lite.model.config import K3Config
from k3lite.model.presets import get_preset
from k3lite.model.stack import K3Model
from k3lite.base.rng import seeded

ASSETS = Path(__file__).resolve().parents[2] / "assets"
DEFAULT_PATH = ASSETS / "lite.safetensors"
SMALL = 4096  # tensors with fewer elements are stored in fp32


def save_checkpoint(model, path: str | Path, meta: dict | None = None) -> int:
    """Write `model` (a K3Model) to `path`; returns the file size in bytes."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tensors = {}
    for name, t in model.state_dict().items():
        t = t.detach().to("cpu")
        if t.is_floating_point() and t.numel() >= SMALL:
            t = t.to(torch.bfloat16)
        tensors[name] = t.contiguous()
    if getattr(model.cfg, "tie_embeddings", False):
        tensors.pop("lm_head.weight", None)
    metadata = {"config": json.dumps(model.cfg.to_dict()), "meta": json.dumps(meta or {})}
    save_file(tensors, str(path), metadata=metadata)
    return path.stat().st_size


def load_checkpoint(path: str | Path):
    """-> (model in eval mode, fp32; meta dict). Raises on a missing/corrupt/mismatched file."""
    with safe_open(str(path), framework="pt") as f:
        metadata = f.metadata() or {}
        if "config" not in metadata:
            raise ValueError("checkpoint has no config in its metadata")
        cfg = K3Config.from_dict(json.loads(metadata["config"]))
        state = {k: f.get_tensor(k) for k in f.keys()}
    with seeded(None):  # its random init is overwritten, but drawing it mid-way through a seeded build would shift that
        model = K3Model(cfg)
    target = model.state_dict()
    state = {k: v.to(target[k].dtype) if k in target else v for k, v in state.items()}
    model.load_state_dict(state, strict=True)
    model.eval()
    return model, json.loads(metadata.get("meta", "{}"))


def load_lite_model(path: str | Path | None = None, cfg: K3Config | None = None):
    """The trained lite model, or a random-init one plus a warning saying why (never raises for a bad file)."""
    path = Path(path) if path is not None else DEFAULT_PATH
    try:
        model, _ = load_checkpoint(path)
        return model, None
    except Exception as e:  # noqa: BLE001 - any failure to read the file means: fall back, visibly
        with seeded(0):
            model = K3Model(cfg or get_preset("lite")).eval()
        reason = "file not found" if not path.exists() else f"{type(e).__name__}: {str(e)[:160]}"
        return model, (f"Could not load the trained checkpoint {path.name} ({reason}); using a randomly "
                       "initialised lite model, so routing and predictions are meaningless. "
                       "Rebuild it with `python -m k3lite.experiments.train --preset lite --out assets/lite.safetensors`.")


def checkpoint_meta(path: str | Path | None = None) -> dict:
    """The training facts saved with a checkpoint (preset, seed, steps, val_loss); {} when the file is missing
    or unreadable (the page then shows the random-init warning of `load_lite_model` instead)."""
    path = Path(path) if path is not None else DEFAULT_PATH
    try:
        with safe_open(str(path), framework="pt") as f:
            return json.loads((f.metadata() or {}).get("meta", "{}"))
    except Exception:  # noqa: BLE001 - same fallback rule as load_lite_model
        return {}


def with_config(model, **changes):
    """A new model with `model`'s weights under a changed config (e.g. attn_res / block size). The two share
    their common weight tensors (no copy: a server holding 18 such variants of the 29 MB lite model pays for
    one), so treat both as read-only: run them, never train either. Parameters the new layout lacks are dropped;
    new ones keep their init (a zero pseudo-query, i.e. uniform depth weights)."""
    cfg = model.cfg.with_(**changes)
    with seeded(None):  # as in load_checkpoint: a build that draws must not interleave with a seeded one
        new = K3Model(cfg)
    target = new.state_dict()
    # assign=True: the new model's parameters become `model`'s own tensors (its fresh init is freed)
    new.load_state_dict({k: v for k, v in model.state_dict().items() if k in target}, strict=False, assign=True)
    return new.eval()
