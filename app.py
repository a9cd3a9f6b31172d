"""specviz: watch speculative decoding happen with real models. Run with `streamlit run app.py`."""

import streamlit as st

st.set_page_config(page_title="specviz", page_icon="🔮", layout="wide")

PAGES = [
    st.Page("pages/home.py", title="Home", icon=":material/home:", default=True),
    st.Page("pages/rounds.py", title="Round by round", icon=":material/slow_motion_video:"),
    st.Page("pages/calculator.py", title="Speedup calculator", icon=":material/calculate:"),
    st.Page("pages/exactness.py", title="Exactness lab", icon=":material/science:"),
    st.Page("pages/workload.py", title="Your workload", icon=":material/fact_check:"),
    st.Page("pages/race.py", title="The race", icon=":material/sports_score:"),
]
st.navigation(PAGES).run()
