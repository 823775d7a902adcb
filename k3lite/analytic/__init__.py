"""Analytic models on top of the model's config: counts, bytes, time and money, no torch kernels run.

    params.py     parameter counts (from the real modules on the meta device), the active-parameter rule
    memory.py     bytes: weights per component and precision, KV cache / KDA state, experts a batch touches
    hardware.py   the cited GPU table (HBM, FLOPs, NVLink, NIC)
    decode.py     THE decode step: bytes read, FLOPs, roofline time (hybrid, serving and the ledger call it)
    latent.py     a LatentMoE layer's wire bytes and FLOPs per token at a latent ratio
    sparsity.py   the seed article's 1.8% of experts vs the share of parameters a token uses
    hybrid.py     the KDA:MLA hybrid's cache and decode on one GPU
    serving/      serving physics over many GPUs (placement, decode, prefill, $ per M tokens), the waterfall,
                  the published checks, the speed-price frontier
    ledger.py     bytes per decoded token by where they move
    cost.py       cost per task; budget.py the memory estimate before a live build
    placement.py  routing at K3 scale: GPUs a token's experts live on; anatomy.py parameters and bytes per part

Imports k3lite.base, k3lite.model.stack and k3lite.interconnect.
"""
