"""The only package that imports streamlit: cached loaders, shared controls and renderers."""
