"""specviz: watch speculative decoding happen with real models. Run with `streamlit run app.py`."""

import streamlit as st

from specviz.core.sampling import SamplingSettings
from specviz.core.settings import RunSettings
from specviz.engine.decode import generate
from specviz.errors import SpecvizError
from specviz.ui.loaders import cached_pair, default_sources
from specviz.viz.text import legend_html, trace_html

st.set_page_config(page_title="specviz", page_icon="🔮", layout="wide")
st.title("specviz: speculative decoding, token by token")
st.write(
    "A small **draft** model proposes K tokens; the **target** checks all of them in one forward pass and keeps "
    "each with probability min(1, p/q). The output follows the target's distribution exactly."
)

prompt = st.text_area("Prompt", "def fibonacci(n):\n    ", height=100)
left, middle, right = st.columns(3)
k = left.slider("K (draft tokens per round)", 1, 16, 4)
temperature = middle.slider("Temperature (0 = greedy)", 0.0, 1.5, 0.0, 0.1)
max_new_tokens = right.slider("Max new tokens", 8, 128, 48, 8)

try:
    target, draft = default_sources()
    pair = cached_pair(target, draft)
    trace = generate(pair, prompt, RunSettings(k=k, sampling=SamplingSettings(temperature), max_new_tokens=max_new_tokens))
except SpecvizError as exc:
    st.error(str(exc))
    st.stop()

st.markdown(trace_html(trace), unsafe_allow_html=True)
st.markdown(legend_html(), unsafe_allow_html=True)
totals = trace.totals
cols = st.columns(4)
cols[0].metric("Rounds (target passes)", totals.rounds)
cols[1].metric("α (accepted / proposed)", f"{totals.alpha:.2f}" if totals.alpha is not None else "n/a")
cols[2].metric("τ (tokens per target pass)", f"{totals.tau:.2f}")
cols[3].metric("Tokens/s", f"{totals.tokens_per_s:.0f}")
st.download_button("Download trace (JSON)", trace.to_json(indent=2), "trace.json", "application/json")
