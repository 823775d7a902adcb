"""3:1 hybrid attention: KV cache and decode time vs context for KDA:MLA patterns of Kimi Linear 48B-A3B."""
import streamlit as st

from k3lite.hybrid import HARDWARE, REPORTED, bytes_ceiling, decode_cost, hybrid_config, kv_reduction
from k3lite.viz.hybrid import (
    cache_vs_context_figure, layer_pattern_figure, speedup_by_ratio_figure, tpot_vs_context_figure,
)
from views.common import explain, push_url, url_state, user_errors

CONTEXTS = [4096, 16384, 65536, 131072, 262144, 524288, 1048576]
ONE_M = 1048576

st.title("3:1 hybrid attention")
st.markdown(
    "A global attention layer (MLA) must keep something for *every* past token, so its cache and its "
    "per-token read grow with the context. A KDA layer keeps a fixed-size state however long the context. "
    "Kimi Linear and K3 interleave three KDA layers with one MLA layer. Move the ratio and see what that does "
    "to the decode cache and the time per output token of **Kimi Linear 48B-A3B** (27 layers; the real "
    "config has MLA every 4th layer and the last), up to a 1M-token context."
)

url_state("hy_ratio", 3, lo=0, hi=7)
url_state("hy_batch", 1, lo=1, hi=256)
url_state("hy_hw", "H100 SXM", choices=list(HARDWARE))
url_state("hy_eff", 1.0, lo=0.05, hi=1.0)
c1, c2, c3, c4 = st.columns(4)
c1.slider("KDA : MLA ratio (KDA layers per MLA layer)", 0, 7, key="hy_ratio", format="%d:1")
c2.slider("batch (sequences decoded together)", 1, 256, key="hy_batch")
c3.selectbox("GPU", list(HARDWARE), key="hy_hw")
c4.slider("MLA kernel efficiency (fraction of HBM bandwidth)", 0.05, 1.0, step=0.05, key="hy_eff")
push_url("hy_ratio", "hy_batch", "hy_hw", "hy_eff")
ratio, batch, hw, eff = (st.session_state.hy_ratio, st.session_state.hy_batch, st.session_state.hy_hw,
                         st.session_state.hy_eff)


@st.cache_data(show_spinner="Counting parameters of the re-patterned 48B model on the meta device…", max_entries=64)
def curves(ratio: int, batch: int, hw: str, eff: float):
    kw = dict(batch=batch, hardware=hw, attention_efficiency=eff)
    rows = {r: [decode_cost(r, n, **kw) for n in CONTEXTS] for r in sorted({0, ratio})}
    by_ratio = [decode_cost(0, ONE_M, **kw).tpot_s / decode_cost(r, ONE_M, **kw).tpot_s for r in range(8)]
    return rows, by_ratio


with user_errors():
    cfg = hybrid_config(ratio)
    rows, by_ratio = curves(ratio, batch, hw, eff)

types = cfg.layer_types()
st.plotly_chart(layer_pattern_figure(types, f"{ratio}:1 → {types.count('kda')} KDA + {types.count('mla')} MLA layers"),
                width="stretch")

names = {0: "0:1 (all MLA)", ratio: f"{ratio}:1"}
left, right = st.columns(2)
left.plotly_chart(cache_vs_context_figure(CONTEXTS, {names[r]: [c.cache_bytes for c in v] for r, v in rows.items()}),
                  width="stretch")
right.plotly_chart(tpot_vs_context_figure(CONTEXTS, {names[r]: [c.tpot_s for c in v] for r, v in rows.items()}),
                   width="stretch")

ours_kv = kv_reduction(ratio, ONE_M)
ours_speed = by_ratio[ratio]
at_1m = rows[ratio][-1]
m1, m2, m3 = st.columns(3)
m1.metric(f"KV cache per sequence at 1M, ours ({ratio}:1)", f"{at_1m.cache_bytes / 1e9:.2f} GB",
          f"-{100 * ours_kv:.1f}% vs all-MLA", delta_color="inverse")
m2.metric("KV reduction at 1M: ours vs reported (3:1)", f"{100 * kv_reduction(3, ONE_M):.1f}% vs 75%")
m3.metric("decode speedup at 1M: ours vs reported (3:1)", f"{by_ratio[3]:.2f}x vs {REPORTED['tpot_speedup_1m'][0]}x")
st.plotly_chart(speedup_by_ratio_figure(list(range(8)), by_ratio, [bytes_ceiling(r) for r in range(8)],
                                        REPORTED["tpot_speedup_1m"][0]), width="stretch")

st.subheader("How we compute it, and why our speedup differs from the reported one")
st.markdown(
    f"""
**Reported**: {REPORTED['kv_reduction'][1]}; {REPORTED['tpot_speedup_1m'][1]}.

**Ours** (`k3lite/hybrid.py`, computed from the preset's config): an MLA layer caches
(kv_lora 512 + rope key 64) = 576 bf16 numbers per token; a KDA layer keeps a 32 × 128 × 128 fp32 state
plus a 3-token conv tail, whatever the context. One decode step reads the active weights once
({at_1m.weight_bytes / 1e9:.1f} GB in bf16, counted from the real modules on the meta device) plus every
sequence's cache; time = max(bytes / HBM bandwidth, FLOPs / peak FLOPs) on one {hw} ({HARDWARE[hw].source}).
At 1M tokens the step is {'memory' if at_1m.memory_bound else 'compute'}-bound.

**The KV reduction matches**: with 7 of 27 layers global, the cache is 7/27 of all-MLA, i.e.
{100 * kv_reduction(3, ONE_M):.1f}% smaller (the fixed KDA states add {at_1m.kda_state_bytes / 1e6:.0f} MB).

**The speedup does not, and cannot from bytes alone**: for 3:1 no bandwidth model can exceed
27 / 7 = {bytes_ceiling(3):.2f}x (dotted line), and at batch 1 the
{at_1m.weight_bytes / 1e9:.1f} GB of weights read every step pull ours down to {by_ratio[3]:.2f}x.
Raising the batch spreads the weights over more sequences and moves ours toward the ceiling; lowering the
MLA kernel efficiency (full attention over 1M tokens rarely runs at the bandwidth peak) does too. The
reported 6.3x is a measured end-to-end number on the authors' kernels and serving setup; it exceeds what the
bytes of this layer pattern allow, so it must include costs of the full-attention baseline we do not model
(kernel efficiency at 1M context, memory pressure from a {rows[0][-1].cache_bytes / 1e9:.0f} GB-per-sequence
cache, and system effects). Treat our number as the bandwidth floor of the benefit, theirs as one measurement.
"""
)
explain("What to notice: past ~100K tokens the MLA cache dominates every byte a decode step reads, so the "
        "share of global layers (1 in 4, plus the last) sets both the cache size and the long-context speed. "
        "7:1 equals 6:1 here because 27 layers leave room for only 3 full periods plus the forced last MLA layer.")
