"""Pure presentation: pandas frames, HTML snippets and Altair charts built from traces (no streamlit here)."""
