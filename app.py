"""specviz: watch speculative decoding happen with real models. Run with `streamlit run app.py`."""

import sys

import streamlit as st

from specviz.ui.limits import Limits
from specviz.viz.text import literal

st.set_page_config(page_title="specviz", page_icon="🔮", layout="wide")

LIMITS = Limits.from_env()
if LIMITS.public:  # a visitor sees an error's type, never a traceback with the deployment's paths in it
    st.set_option("client.showErrorDetails", "type")


@st.cache_resource
def report_settings_once(problems: tuple[str, ...]) -> None:
    """The operator's mistakes in the environment, on the console once (the sidebar shows them too)."""
    for problem in problems:
        print(f"specviz: {problem}", file=sys.stderr)


report_settings_once(LIMITS.problems)
for problem in LIMITS.problems:
    st.sidebar.warning(literal(problem))

PAGES = [
    st.Page("pages/home.py", title="Home", icon=":material/home:", default=True),
    st.Page("pages/rounds.py", title="Round by round", icon=":material/slow_motion_video:"),
    st.Page("pages/calculator.py", title="Speedup calculator", icon=":material/calculate:"),
    st.Page("pages/exactness.py", title="Exactness lab", icon=":material/science:"),
    st.Page("pages/workload.py", title="Your workload", icon=":material/fact_check:"),
    st.Page("pages/race.py", title="The race", icon=":material/sports_score:"),
]
st.navigation(PAGES).run()
