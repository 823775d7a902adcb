"""Every abbreviation and term of art the app uses, in plain words: the glossary page reads this table.

Plain data (no Streamlit), so tests can check that every abbreviation in a page's titles, headers and metric
labels has an entry (tests/tour/test_glossary.py). `page` is the url_path of the page that shows the idea live.
"""
from __future__ import annotations

from typing import NamedTuple

from k3lite.analytic.hardware import GPUS, H100_SMI_MIB
from k3lite.base.evidence import KINDS, MARKERS, MEANING
from k3lite.base.units import GIB, ONE_M_CONTEXT, PER_M_TOKENS


class Term(NamedTuple):
    term: str  # as the app writes it
    expansion: str  # what the letters stand for ("" for a term that is not an abbreviation)
    meaning: str  # one or two sentences, no jargon left undefined
    page: str | None = None  # url_path of the page that shows it live
    aliases: tuple[str, ...] = ()  # other spellings the app uses (plural, a longer form)


# the app's units rule (k3lite/base/units.py), written out with the numbers the formatters use
UNITS_RULE = (
    "Bytes that move or are counted (wire bytes, bytes read per token, weights, caches) and rates (GB/s, TB/s) are "
    "decimal, as network and HBM-bandwidth datasheets write them: 1 kB = 1,000 B, 1 MB = 10⁶ B, 1 GB = 10⁹ B, "
    "1 TB = 10¹² B. HBM capacity is binary, as the hardware is: an \"80 GB\" H100 is counted as 80 GiB "
    f"(1 GiB = 2³⁰ = {GIB:,} B; nvidia-smi shows {H100_SMI_MIB:,} MiB = {H100_SMI_MIB / 1024:.1f} GiB usable), and capacities print in GiB. \"1M tokens\" of context is 2²⁰ = "
    f"{ONE_M_CONTEXT:,} tokens, as context windows are sized; a price \"per M tokens\" is per 10⁶ = "
    f"{PER_M_TOKENS:,} tokens, as price lists mean it.")

# the five evidence classes a number's marker names (k3lite/base/evidence.py)
EVIDENCE_CLASSES = ("Every number a page shows says what kind of evidence it is, by a quiet superscript letter after its "
                    "label, its column's name or in its hover (the source in the tooltip): "
                    + "; ".join(f"{MARKERS[k]} {k}: {MEANING[k]}" for k in KINDS) + ".")

GLOSSARY: tuple[Term, ...] = (
    # --- the model ----------------------------------------------------------------------------------------
    Term("MoE", "mixture of experts", "A layer made of many small feed-forward networks (experts); a router sends "
         "each token to a few of them, so most of the parameters sit idle for any one token.", "moe"),
    Term("LatentMoE", "latent mixture of experts", "K3's MoE: the token is projected down to a smaller latent "
         "vector before it is sent to the experts and projected back up after, so fewer bytes cross the wire and "
         "each expert computes in the smaller dimension.", "moe", ("latent",)),
    Term("routed experts", "", "The experts a router chooses among (896 in K3); each token visits top-k of them.",
         "moe"),
    Term("shared experts", "", "Experts every token visits, beside the routed ones (2 in K3).", "moe"),
    Term("top-k", "", "How many routed experts each token is sent to (16 in K3): the k highest router scores.",
         "moe"),
    Term("FFN", "feed-forward network", "The per-token two-layer network of a transformer block (here: the MoE "
         "layer or, in the first layers, one dense FFN).", "forward_pass"),
    Term("GLU", "gated linear unit", "A feed-forward network whose hidden layer is a gate times a value: "
         "act(W_gate x) ⊙ (W_up x), then a down-projection. The activation names the variant.", "moe"),
    Term("SwiGLU", "Swish-gated linear unit", "A GLU with SiLU (swish) as the gate's activation: silu(g) · u. "
         "Unbounded: it grows like g·u, so a large input gives a large output (DeepSeek-V3, K2, Kimi Linear).", "moe"),
    Term("SiTU", "", "K3's bounded GLU (SiTU-GLU): β1·tanh(g/β1)·sigmoid(g) · β2·tanh(u/β2) with "
         "β1 = 4, β2 = 25, so an expert's hidden value never exceeds β1·β2 = 100 in size (Kimi K3 report, Eq. 12).",
         "moe", ("SiTU-GLU",)),
    Term("MLA", "Multi-head Latent Attention", "DeepSeek-V3's global attention: keys and values are cached as one "
         "small compressed (latent) vector per token instead of full per-head keys and values. K3 keeps one MLA "
         "layer in every four.", "hybrid_attention"),
    Term("KDA", "Kimi Delta Attention", "A linear-attention layer with a fixed-size state matrix per head: each "
         "token decays the state per channel and writes a correction (the delta rule), so its memory does not "
         "grow with the context.", "kda", ("KimiDeltaAttention",)),
    Term("delta rule", "", "Write only what the state gets wrong: S ← S + β k (v − Sᵀk)ᵀ, the error v − Sᵀk "
         "between the stored and the new value, scaled by a learning rate β.", "kda"),
    Term("GDN", "Gated DeltaNet", "A linear-attention layer with the delta rule and one scalar decay per head; KDA "
         "refines it with a decay per channel.", "kda", ("Gated DeltaNet",)),
    Term("DeltaNet", "", "Linear attention with the delta rule and no decay (the state forgets only by "
         "overwriting).", "lab"),
    Term("Mamba2", "", "A state-space sequence mixer with a fixed-size state and one scalar decay per head, one "
         "of the lab's comparison mixers.", "lab"),
    Term("3:1 hybrid", "", "Three KDA layers for every MLA layer: the fixed-size states do most of the work, the "
         "global layer can still attend to every earlier token (recall it learns, not a guarantee).", "hybrid_attention", ("hybrid",)),
    Term("AttnRes", "Attention Residuals", "Instead of adding each layer's output to one running sum, a layer "
         "reads earlier layers' outputs with a softmax over depth; the block variant groups layers into blocks "
         "to keep the reads cheap.", "attention_residuals", ("Attention Residuals",)),
    Term("GQA", "grouped-query attention", "Attention in which several query heads share one key and value head, "
         "so the KV cache is smaller by that group size; the serving page counts its K and V per token beside MLA's "
         "latent.", "serving"),
    Term("KV cache", "key-value cache", "What global attention keeps for every past token so it need not "
         "recompute it; it grows with the context (KDA keeps a fixed-size state instead).", "hybrid_attention",
         ("KV",)),
    Term("state", "", "KDA's fixed-size memory: one d_k × d_v matrix per head, written by every token.", "kda"),
    Term("LM head", "language-model head", "The last matrix: hidden state → one score per vocabulary entry.",
         "forward_pass", ("LM",)),
    Term("RMSNorm", "root-mean-square normalisation", "Scales a vector to unit root-mean-square, then by a learned "
         "gain; applied before each sublayer.", "forward_pass"),
    Term("L2", "L2 norm", "The Euclidean length of a vector; KDA normalises its keys and queries to L2 length 1.",
         "kda"),
    Term("A3B", "3B active", "Part of a model name: about 3 billion parameters active per token (Kimi Linear "
         "48B-A3B: 48B in total).", "hybrid_attention"),
    # --- routing and balance ------------------------------------------------------------------------------
    Term("router", "", "The small linear layer that scores every expert for a token; the top-k scores win.",
         "moe"),
    Term("quantile balancing", "", "K3's balancer: subtract from each expert's score a cut read off the quantiles "
         "of recent batches' scores, so each expert gets about its share; no step size to tune.", "moe",
         ("QB", "quantile")),
    Term("aux loss", "auxiliary loss", "Balancing by an extra loss term that penalises uneven expert loads "
         "(Switch Transformer).", "moe", ("Switch",)),
    Term("bias balancing", "", "DeepSeek-V3's balancer: a per-expert bias added to the scores for selection, "
         "nudged down by γ when the expert is overloaded and up when underloaded.", "moe", ("bias",)),
    Term("max-violation", "", "max(load) / mean(load) − 1 over the experts: 0 is perfectly even, 1 means the "
         "busiest expert gets twice its share. The busiest expert sets the layer's speed.", "moe"),
    Term("load CV", "coefficient of variation of expert load", "Standard deviation / mean of tokens per expert: "
         "a whole-distribution measure of imbalance (max-violation looks only at the busiest).", "moe", ("CV",)),
    Term("flips", "", "The share of top-k choices that change when the router scores get tiny random noise "
         "(std 0.01): how fragile the routing is.", "moe"),
    Term("MSE", "mean squared error", "The average squared difference between a prediction and its target; the "
         "MoE page's quality proxy.", "moe"),
    # --- hardware and the wire ----------------------------------------------------------------------------
    Term("GPU", "graphics processing unit", "The accelerator the model runs on; its memory (HBM) and links "
         "(NVLink, NIC) set the speed of decoding.", "serving", ("GPUs",)),
    Term("CPU", "central processing unit", "The processor this server runs the small models on.", None),
    Term("HBM", "high-bandwidth memory", "The GPU's own memory: weights and caches live here, and reading them "
         "every decoding step is often what limits speed.", "serving"),
    Term("NVLink", "", "NVIDIA's GPU-to-GPU link inside one server or rack (hundreds of GB/s per GPU).",
         "interconnect"),
    Term("NVL72", "NVLink 72", "A rack of 72 GPUs all joined by NVLink: one NVLink domain.", "interconnect"),
    Term("NIC", "network interface card", "The network card that carries traffic between servers (tens of GB/s "
         "per GPU), much slower than NVLink.", "interconnect"),
    Term("RDMA", "remote direct memory access", "A NIC writing straight into another server's GPU memory; how "
         "DeepEP moves tokens between nodes.", "interconnect"),
    Term("EP", "expert parallelism", "Spreading the experts over several GPUs; each token's hidden state is sent "
         "(dispatch) to the GPUs holding its experts and the results are sent back (combine).", "interconnect",
         ("EP size",)),
    Term("EPLB", "expert-parallel load balancer", "DeepSeek's open-source balancer for serving: from the loads it "
         "observes, it replicates the busiest experts and places experts on GPUs so that every GPU gets about the "
         "same number of tokens (the busiest GPU sets each step's time).", "serving"),
    Term("DP attention", "data-parallel attention", "Each GPU (or small TP group) of an expert-parallel replica runs "
         "attention for its own requests with a whole copy of the attention weights: the caches are not split and "
         "attention needs no all-reduce; only the MoE layers exchange tokens. SGLang's and vLLM's way to serve MLA "
         "models such as DeepSeek-V3 and K3.", "serving", ("DP", "data-parallel attention")),
    Term("TP", "tensor parallelism", "Splitting each weight matrix over several GPUs, which then exchange partial "
         "results every layer.", "serving"),
    Term("dispatch", "", "Sending a token's (latent) hidden state to the GPUs of its chosen experts.",
         "interconnect"),
    Term("combine", "", "Sending the experts' weighted outputs back to the token's GPU and summing them.",
         "interconnect"),
    Term("node limit", "", "Routing a token to experts on at most M servers (nodes), so fewer copies cross the "
         "slow NIC.", "interconnect", ("M",)),
    Term("DeepEP", "", "DeepSeek's open-source library of expert-parallel communication kernels (normal kernels "
         "for throughput, low-latency kernels for decoding).", "interconnect"),
    Term("all_to_all", "", "The collective where every GPU sends a different piece to every other GPU: the shape "
         "of MoE dispatch and combine.", "interconnect"),
    Term("DGX", "", "NVIDIA's 8-GPU server (DGX B300: eight B300 GPUs joined by NVLink).", "interconnect"),
    Term("B300", "", "An NVIDIA Blackwell Ultra GPU (288 GiB of HBM: the datasheet's \"288 GB\"); GB300 pairs it with a Grace CPU.", "serving",
         ("GB300",)),
    Term("H100", "", f"An NVIDIA Hopper GPU ({GPUS['H100 SXM'].capacity_words} of HBM in the SXM form); H200 has "
         f"{GPUS['H200'].capacity_words}.", "hybrid_attention",
         ("H200", "SXM")),
    # --- numbers and formats ------------------------------------------------------------------------------
    Term("BF16", "bfloat16", "A 16-bit floating-point format with float32's range: 2 bytes per number.", None,
         ("bf16",)),
    Term("FP8", "8-bit floating point", "1 byte per number, with a scale per block of numbers; used for weights "
         "and for dispatch on the wire.", "interconnect", ("fp8",)),
    Term("FP32", "32-bit floating point", "4 bytes per number; the KDA state is kept in it.", "kda", ("fp32",)),
    Term("NVFP4", "NVIDIA 4-bit floating point", "Half a byte per number plus an FP8 scale per 16 numbers "
         "(Blackwell GPUs).", "serving"),
    Term("MXFP4", "microscaling 4-bit floating point", "The OCP standard 4-bit format: half a byte per number plus "
         "a shared power-of-two scale per 32 numbers.", "serving"),
    Term("kB, MB, GB, TB", "kilo-, mega-, giga-, terabytes", UNITS_RULE, None,
         ("kB", "MB", "GB", "TB", "GiB", "1M", "units")),
    Term("FLOPs", "floating-point operations", "The count of multiply and add operations; a GPU's peak FLOP/s "
         "bounds the compute-bound steps.", "hybrid_attention"),
    # --- serving and cost ---------------------------------------------------------------------------------
    Term("TPOT", "time per output token", "How long a decoding step takes: the gap between two generated "
         "tokens for one user.", "hybrid_attention"),
    Term("roofline", "", "A speed estimate that takes the slower of two limits: bytes to move / memory bandwidth "
         "and operations / peak compute.", "hybrid_attention"),
    Term("prefill", "", "Reading the prompt: all its tokens in one pass, compute-bound.", "serving"),
    Term("decode", "", "Generating one token at a time, each step reading the weights and caches: usually "
         "memory-bound.", "serving", ("decoding",)),
    Term("speculative decoding", "", "A cheap drafter proposes several next tokens; the big model checks them all "
         "in one forward pass and keeps the longest accepted run, so one step can emit several tokens. The tokens "
         "kept per step (the acceptance) set the gain.", "serving", ("speculation", "drafter", "DSpark")),
    Term("MTP", "multi-token prediction", "Extra layers trained to predict the tokens after the next one "
         "(DeepSeek-V3 ships one MTP module); at serving time they are the drafter for speculative decoding.",
         "serving", ("MTP layer",)),
    Term("batch", "", "Sequences decoded together in one step: they share one read of the weights.", "serving"),
    Term("$ / M tokens", "dollars per million tokens", "How API prices are quoted; input, cached input and "
         "output tokens are priced separately.", "cost_per_task"),
    Term("cost per task", "", "Dollars spent until a task succeeds, retries included: price per token × tokens "
         "per attempt ÷ success rate.", "cost_per_task"),
    Term("evidence classes", "", EVIDENCE_CLASSES, None, ("evidence", *MARKERS.values())),
    # --- the lab ------------------------------------------------------------------------------------------
    Term("MQAR", "multi-query associative recall", "A synthetic task: key-value pairs appear in the sequence, "
         "then several keys are queried; a mixer must recall each key's value. It measures memory.", "lab"),
)


def lookup() -> dict[str, Term]:
    """Every spelling (term and aliases, as written and lower-cased) -> its entry."""
    table: dict[str, Term] = {}
    for t in GLOSSARY:
        for name in (t.term, *t.aliases):
            table[name] = t
            table.setdefault(name.lower(), t)
    return table


def search(query: str) -> list[Term]:
    """Entries whose term, expansion, aliases or meaning contain `query` (case-insensitive); all for ''."""
    q = query.strip().lower()
    if not q:
        return list(GLOSSARY)
    return [t for t in GLOSSARY if q in " ".join((t.term, t.expansion, *t.aliases, t.meaning)).lower()]
