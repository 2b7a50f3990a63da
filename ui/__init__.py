"""Streamlit helpers shared by the pages (the library, ``resviz``, has none)."""
