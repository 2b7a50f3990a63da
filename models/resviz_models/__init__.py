"""resviz's own trained models, as data: the Sonnets GPT-2 (``tiny_gpt2/``, 4 blocks,
with the text it was trained on) and its siblings of 1, 2 and 8 blocks, the depth
ladder (``tiny_gpt2_ladder/N/``), each a folder a Hugging Face model was saved to
(config.json, model.safetensors, the tokenizer). ``scripts/train_tiny_gpt2.py`` in the
resviz repository wrote them.

This package holds no code to call: ``resviz.pretrained`` finds it
(``resviz.pretrained.loading.models_folder``) without importing it. It is a package of
its own so that the library's wheel carries no weights."""
