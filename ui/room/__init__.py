"""The workshop room: shared state (``store``), the Streamlit views (``view``) and
the handout (``handout``). See docs/workshop.md."""
