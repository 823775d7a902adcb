"""The model: torch modules and their slow references, nothing about hardware or cost.

    config.py      validated K3Config and its parts (MLA, KDA, MoE)
    presets.py     the presets by name (the released Kimi K3 config, lite, K2, DeepSeek-V3, ...)
    cards.py       each preset's model card: display name, colour, stated totals, MTP layers, price
    variants.py    K3 beside another model or without one idea (COMPARISONS: each one's card, where it shows)
    nn.py          building blocks: RMSNorm, the gated FFNs (SwiGLU, SiTU-GLU), the learning-rate schedule
    kda/           Kimi Delta Attention: token-by-token and chunk-wise references, the fast kernels, the layer
    mla.py         gated multi-head latent attention with a latent-only KV cache
    moe/           router, balancing (aux loss, sign bias, quantiles), grouped dispatch, LatentMoE, references
    attnres.py     Attention Residuals (full and block)
    stack.py       the hybrid stack and the dense baseline
    trace.py       the per-layer Trace the pages draw
    checkpoint.py  the shipped checkpoint: save, load, its training facts

Imports only k3lite.base (and torch, numpy).
"""
