"""The Pretrained models page's captions that word a section's result or its settings:
:mod:`.measures` (the measurement sections' accounts) and :mod:`.intros` (what a section
does, said before it runs, and why a model cannot take it)."""
