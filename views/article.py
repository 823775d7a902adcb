"""The seed article beside the app: each claim, what the app computes for it, and where to see it live."""
import math

import streamlit as st

from k3lite.analytic.params import count_params
from k3lite.analytic.sparsity import sparsity_shares
from k3lite.base.evidence import derived
from k3lite.tour.steps import STEPS, weights_in_gpus
from k3lite.viz.article import shares_figure
from k3lite.viz.memo import shared_figure
from views.common import metric, sentence, show_code
from views.registry import by_url_path


def md(text: str) -> str:
    """Escape $ for Markdown (two of them would render as LaTeX)."""
    return text.replace("$", "\\$")


@st.cache_data(show_spinner="Computing each claim with the pages' functions…", max_entries=len(STEPS))
def computed(index: int):
    return STEPS[index].compute()


@st.cache_data(max_entries=1)
def shares():
    return sparsity_shares()


st.title("The article beside the app")
st.markdown("**Does each number in the seed article (a third-party blog post on K3) hold when the app computes it?**")

s = shares()
st.subheader(f"“About {100 * s.expert_share:.1f}%”, or {100 * s.param_share:.2f}%?")
c1, c2 = st.columns([1, 3])
SHARES = derived(sparsity_shares, count_params)  # from K3's released config, counted here
metric(c1, "experts a token visits (the article)", f"{100 * s.expert_share:.2f} %", SHARES,
       help=f"{s.top_k} / {s.n_routed}, as K3's released config.json states them")
metric(c1, "parameters a token uses (the app)", f"{100 * s.param_share:.2f} %", SHARES,
       help=f"{s.active / 1e9:.0f}B / {s.total / 1e12:.2f}T, counted on the meta device (k3lite.analytic.params)")
c2.plotly_chart(shared_figure(shares_figure, s, evidence=SHARES), width="stretch")
st.markdown(s.sentence() + " The tour's first step asks for the parameter share.")
show_code(sparsity_shares, shares_figure)

st.subheader("Claim by claim")
six = weights_in_gpus("B300")
fits_six = [f for f, gpus in six.items() if math.ceil(gpus) == 6]
st.markdown(md(f"**Six B300s** — the app: six holds for {', '.join(fits_six) or 'no format'} "
               f"[{by_url_path('serving').short}](serving)"))
with st.expander("Six B300s: the article's claim and every format"):
    st.markdown(md(f"The article: K3 at reduced precision spreads its weights across roughly six GPUs. The app: "
                   f"{six['as released']:.2f} (as released: MXFP4 routed experts, bf16 rest), "
                   f"{', '.join(f'{gpus:.1f} ({f})' for f, gpus in six.items() if f != 'as released')} B300s' worth of "
                   "HBM for the weights alone."))
for i, step in enumerate(STEPS, start=1):
    r = computed(i - 1)
    st.markdown(md(f"**{step.title}** — the app: **{r.answer_text}** "
                   f"[{by_url_path(step.page).short}]({step.page}) · [tour step {i}](tour?tour_step={i})"))
    with st.expander(f"The article's claim, and why {r.answer_text}, from the numbers"):
        st.markdown(md(f"*The article:* {step.claim}\n\n*The question:* {step.question}\n\n{r.explanation}"))
        if r.details:
            sentence(md(" · ".join(f"{k}: {v}" for k, v in r.details.items())), step.evidence)
