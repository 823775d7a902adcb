"""Results a page would compute for its first visitor, made once by a command and shipped in assets/precomputed/.

    python -m k3lite.experiments.precomputed            # (re)make every asset below (a few minutes on 2 cores)
    python -m k3lite.experiments.precomputed --check    # which shipped assets are missing or stale (exit 1 if any)

Each asset is one pure computation with fixed arguments (the MoE page at its defaults, the tour's setting). It is stored with a
**fingerprint**: the sha256 of its name and arguments, the torch version, and the bytes of every file it
depends on (the checkpoint it reads, the source of the modules that compute it). `shipped(name, ...)`
returns the stored result only when that fingerprint matches what is on disk now and the stored files'
own sha256 match the ones recorded; otherwise None, and the caller computes live. So an edit to the model
code, the checkpoint or the demo makes the asset stale, never wrong: the page is slower until the command
above runs again (tests/experiments/test_precomputed.py fails meanwhile, to say so).

Format: `<name>.json` (arguments, fingerprint, the result as a tree of NamedTuples / dicts / lists / numbers,
the sha256 of both files) and `<name>.safetensors` (the tensors in that tree): no pickle, nothing
executable; a NamedTuple is rebuilt only if its class lives in k3lite.
"""
from __future__ import annotations

import argparse
import hashlib
import importlib
import json
import sys
from pathlib import Path
from typing import Any, Callable, NamedTuple

import torch
from safetensors.torch import load_file, save_file

from k3lite.experiments.moe_balance import run_balance
from k3lite.experiments.moe_demo import calibration_stream, check_prompt, model_moe_inputs, prompt_demo
from k3lite.model.checkpoint import load_lite_model
from k3lite.model.config import MoEConfig
from k3lite.model.presets import get_preset

ROOT = Path(__file__).resolve().parents[2]
DIR = ROOT / "assets" / "precomputed"

# ------------------------------------------------------------------------------------------ encoding
def _encode(value: Any, tensors: dict[str, torch.Tensor]) -> Any:
    if isinstance(value, torch.Tensor):
        key = f"t{len(tensors)}"
        tensors[key] = value.detach().cpu().contiguous().clone()
        return {"__tensor__": key}
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # a NamedTuple
        cls = type(value)
        return {"__namedtuple__": f"{cls.__module__}:{cls.__qualname__}",
                "fields": {f: _encode(getattr(value, f), tensors) for f in value._fields}}
    if isinstance(value, dict):
        return {"__dict__": [[_encode(k, tensors), _encode(v, tensors)] for k, v in value.items()]}
    if isinstance(value, tuple):
        return {"__tuple__": [_encode(v, tensors) for v in value]}
    if isinstance(value, list):
        return [_encode(v, tensors) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"cannot store a {type(value).__name__} in a precomputed asset")


def _decode(node: Any, tensors: dict[str, torch.Tensor]) -> Any:
    if isinstance(node, list):
        return [_decode(v, tensors) for v in node]
    if not isinstance(node, dict):
        return node
    if "__tensor__" in node:
        return tensors[node["__tensor__"]]
    if "__tuple__" in node:
        return tuple(_decode(v, tensors) for v in node["__tuple__"])
    if "__dict__" in node:
        return {_decode(k, tensors): _decode(v, tensors) for k, v in node["__dict__"]}
    if "__namedtuple__" in node:
        module, qualname = node["__namedtuple__"].split(":")
        if not module.startswith("k3lite."):
            raise ValueError(f"refusing to rebuild {node['__namedtuple__']}: only k3lite types are stored")
        cls = getattr(importlib.import_module(module), qualname)
        if not (isinstance(cls, type) and issubclass(cls, tuple) and hasattr(cls, "_fields")):
            raise ValueError(f"{node['__namedtuple__']} is not a NamedTuple")
        return cls(**{f: _decode(v, tensors) for f, v in node["fields"].items()})
    raise ValueError(f"unknown node in a precomputed asset: {sorted(node)[:3]}")


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


# ------------------------------------------------------------------------------------------ what is shipped
MODEL_SOURCES = ("k3lite/model/stack.py", "k3lite/model/moe", "k3lite/model/mla.py", "k3lite/model/kda",
                 "k3lite/model/attnres.py", "k3lite/model/nn.py", "k3lite/model/trace.py", "k3lite/model/checkpoint.py",
                 "k3lite/model/config.py", "k3lite/model/presets.py")
DEMO_SOURCES = ("k3lite/experiments/moe_demo.py", "k3lite/base/tokenizer.py")  # the prompt demo and the calibration text

# the MoE page's defaults (views/moe.py); a test renders the page and checks that it uses these assets
MOE_LAYER = 4
MOE_PROMPT = "The cat sat on the mat, and 42 dogs barked at 3.14 birds."
BALANCE_ARGS = {"steps": 150, "batch": 128}


def moe_page_cfg(d_model: int) -> MoEConfig:
    """The MoE page's live layer at its defaults, K3's routing shape (config.json): 896 experts, top-16, 2 shared,
    latent d/2, quantile balancing; the experts themselves small (FFN 32, shared 64): only routing is shown live."""
    return MoEConfig(n_routed_experts=896, top_k=16, expert_ffn_dim=32, n_shared_experts=2, shared_ffn_dim=64,
                     latent_dim=round(d_model * 0.5), latent_norm=True, balancing="quantile", bias_gamma=0.01)


def moe_default_cfg(d_model: int) -> MoEConfig:
    """The small setting the tour's balancing question asks about (64 experts, top-8, latent 1/4; the MoE page
    reaches it with its sliders): what the MoE page opened at before it opened at K3's shape (`moe_page_cfg`)."""
    return MoEConfig(n_routed_experts=64, top_k=8, expert_ffn_dim=32, n_shared_experts=2, shared_ffn_dim=64,
                     latent_dim=round(d_model * 0.25), latent_norm=True, balancing="quantile", bias_gamma=0.01)


def _lite():
    model, warning = load_lite_model()
    if warning:
        raise RuntimeError(f"cannot precompute from a random-init model: {warning}")
    return model


def _moe_stream():
    return model_moe_inputs(_lite(), calibration_stream())[MOE_LAYER]  # (L, d)


def _moe_demo(cfg_of=moe_default_cfg):
    model = _lite()
    prompt_x = model_moe_inputs(model, check_prompt(MOE_PROMPT))[MOE_LAYER]
    return prompt_demo(cfg_of(model.cfg.d_model), model.cfg.d_model, MOE_PROMPT,
                       stream_x=_moe_stream(), prompt_x=prompt_x)


class Asset(NamedTuple):
    compute: Callable[[], Any]
    args: dict  # what the result depends on besides the files (part of the fingerprint)
    files: tuple[str, ...]  # files and folders (relative to the repo root) whose bytes it depends on


def _assets() -> dict[str, Asset]:
    model_files = ("assets/lite.safetensors",) + MODEL_SOURCES + DEMO_SOURCES
    width = get_preset("lite").d_model
    demo_args = {"layer": MOE_LAYER, "prompt": MOE_PROMPT, "cfg": repr(moe_default_cfg(width))}
    page_args = {"layer": MOE_LAYER, "prompt": MOE_PROMPT, "cfg": repr(moe_page_cfg(width))}
    return {
        "moe_stream_layer4": Asset(_moe_stream, {"layer": MOE_LAYER}, model_files),
        "moe_demo_default": Asset(_moe_demo, demo_args, model_files),  # the tour's 64 experts, top-8
        "moe_demo_page": Asset(lambda: _moe_demo(moe_page_cfg), page_args, model_files),  # the page's K3 shape
        "moe_balance_runs": Asset(lambda: run_balance(**BALANCE_ARGS), BALANCE_ARGS,
                                  ("k3lite/model/moe", "k3lite/model/config.py", "k3lite/experiments/moe_balance.py")),
    }


ASSETS = _assets()


def fingerprint(name: str) -> str:
    """sha256 of the asset's name, arguments, torch version and the bytes of every file it depends on."""
    asset = ASSETS[name]
    h = hashlib.sha256(json.dumps([name, asset.args, torch.__version__], sort_keys=True).encode())
    paths = []
    for rel in asset.files:
        p = ROOT / rel
        paths += sorted(p.rglob("*.py")) if p.is_dir() else [p]
    for p in paths:
        h.update(str(p.relative_to(ROOT)).encode())
        h.update(sha256_file(p).encode() if p.exists() else b"missing")
    return h.hexdigest()


# ------------------------------------------------------------------------------------------ read / write
_loaded: dict[str, Any] = {}


def shipped(name: str) -> Any | None:
    """The stored result of asset `name` if it is fresh and intact, else None (then compute live)."""
    if name in _loaded:
        return _loaded[name]
    meta_path, tensor_path = DIR / f"{name}.json", DIR / f"{name}.safetensors"
    try:
        meta = json.loads(meta_path.read_text())
        if meta["fingerprint"] != fingerprint(name) or sha256_file(tensor_path) != meta["tensors_sha256"]:
            return None
        if hashlib.sha256(json.dumps(meta["value"], sort_keys=True).encode()).hexdigest() != meta["value_sha256"]:
            return None
        value = _decode(meta["value"], load_file(tensor_path))
    except (OSError, KeyError, ValueError, TypeError):
        return None
    _loaded[name] = value
    return value


def moe_default_demo():
    """The (a)-(b) demo at `moe_default_cfg` (64 experts, top-8), the setting the tour's balancing step asks about:
    shipped if fresh, else computed now (the same numbers as the MoE page at 64 experts, top-8, latent 1/4)."""
    value = shipped("moe_demo_default")
    return value if value is not None else _moe_demo()

def make(name: str) -> Path:
    """Compute asset `name` live and store it with its fingerprint."""
    tensors: dict[str, torch.Tensor] = {}
    value = _encode(ASSETS[name].compute(), tensors)
    DIR.mkdir(parents=True, exist_ok=True)
    tensor_path = DIR / f"{name}.safetensors"
    save_file(tensors, str(tensor_path))
    meta = {"name": name, "args": ASSETS[name].args, "torch": torch.__version__, "fingerprint": fingerprint(name),
            "tensors_sha256": sha256_file(tensor_path),
            "value_sha256": hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest(), "value": value}
    path = DIR / f"{name}.json"
    path.write_text(json.dumps(meta, indent=1, sort_keys=True))
    _loaded.pop(name, None)
    return path


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m k3lite.experiments.precomputed", description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="only report missing or stale assets")
    ap.add_argument("names", nargs="*", help=f"assets to make (default: all of {sorted(ASSETS)})")
    args = ap.parse_args(argv)
    unknown = [n for n in args.names if n not in ASSETS]
    if unknown:
        ap.error(f"unknown assets {unknown}; known: {sorted(ASSETS)}")
    names = args.names or sorted(ASSETS)
    if args.check:
        stale = [n for n in names if shipped(n) is None]
        for n in names:
            print(f"{n:<20} {'STALE or missing' if n in stale else 'fresh'}")
        return 1 if stale else 0
    torch.set_num_threads(1)  # the page runs these on the server's bounded threads; 1 is the usual case
    for n in names:
        print(f"made {make(n).relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
