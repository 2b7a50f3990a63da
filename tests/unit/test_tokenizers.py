"""One cleaning (rv.data.clean_text) and one splitter (split_tokens) under every
tokenizer: the playground's word and char levels, the sinusoidal page's space level
(tokenize_words) and char_tokenize."""

import pytest

from resviz import data as D

ODD = [
    "",
    " \t\n ",
    "I am a robot",
    "  spaced\u00a0out\u3000text ",
    "robot 🤖 👩\u200d💻 أنا روبوت",
    "nul\x00l byte \x00",
    "<script>alert(1)</script> **bold**",
    "lone \ud800 surrogate",
    "line\rbreak\x0bvtab\x1cfs\x85nel",
    "bell\x07 esc\x1b[0m del\x7f c1\x9f",
]


def test_clean_text_is_one_rule():
    # Lone surrogates become "?", so every token survives UTF-8 to the browser.
    assert D.clean_text("lone \ud800 surrogate") == "lone ? surrogate"
    # Control characters that are not whitespace are dropped, the null byte among them.
    assert D.clean_text("nul\x00l bell\x07 esc\x1b") == "null bell esc"
    # Control whitespace is whitespace: a carriage return separates words.
    assert D.clean_text(" a\r\nb\x0bc\x85d\t ") == "a b c d"
    # A word of nothing but invisible control characters is no token, like one of null
    # bytes (the sinusoidal page used to keep it as a blank position).
    assert D.tokenize_words("a \x07\x1b b \x00") == (["a", "b"], False)
    # Everything else is kept verbatim.
    assert D.clean_text("<b>👩\u200d💻</b>") == "<b>👩\u200d💻</b>"


@pytest.mark.parametrize("text", ODD)
def test_every_level_splits_the_cleaned_text(text):
    clean = D.clean_text(text)
    assert D.split_tokens(text, "space") == clean.split()
    assert D.split_tokens(text, "char") == list(clean)
    assert "".join(D.split_tokens(text, "space")) == clean.replace(" ", "")
    # The sinusoidal page's tokens are the space level; char_tokenize is the char level.
    assert D.tokenize_words(text, 1000) == (D.split_tokens(text, "space"), False)
    ids, chars, truncated = D.char_tokenize(text, 256, 1000)
    assert chars == D.split_tokens(text, "char") and not truncated
    assert ids == [min(ord(c), 255) for c in chars]
    for level in ("word", "char", "space"):
        for t in D.split_tokens(text, level):
            t.encode("utf-8")


def test_the_levels_differ_only_in_how_they_split():
    text = "The cat, the\rHat! \ud800"
    assert D.split_tokens(text, "word") == ["the", "cat", ",", "the", "hat", "!", "?"]
    assert D.split_tokens(text, "space") == ["The", "cat,", "the", "Hat!", "?"]
    assert D.split_tokens(text, "char")[:5] == ["T", "h", "e", " ", "c"]
    # The playground's vocabulary and ids come from the same splitter.
    toks, vocab = D.tokenize(text, "word", max_len=10)
    assert list(toks.tokens) == D.split_tokens(text, "word")
    with pytest.raises(ValueError, match="level='bpe' is not one of 'word', 'char', 'space'"):
        D.split_tokens(text, "bpe")


def test_char_tokenize_truncates_and_marks_unknown():
    ids, chars, truncated = D.char_tokenize("ab  🤖\x00c", vocab_size=128, max_len=4)
    assert chars == ["a", "b", " ", "🤖"] and truncated
    assert ids == [97, 98, 32, 127]  # the emoji's code point does not fit: unknown
    with pytest.raises(ValueError, match="vocab_size"):
        D.char_tokenize("a", 1, 4)
