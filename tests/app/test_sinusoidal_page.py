"""The sinusoidal page shows numbers that match the closed forms."""

from resviz.words.seeds import band_words
from tests.app.conftest import find_metric

PAGE = "app_pages/sinusoidal_encoding.py"


def test_default_view_pins_lecture_table_and_invariants(app):
    at = app(PAGE).run()
    assert not at.exception and not at.error
    table = at.dataframe[0].value.set_index("token")
    lecture = {
        "am": [0.84, 0.54, 0.10, 1.00],
        "a": [0.91, -0.42, 0.20, 0.98],
        "robot": [0.14, -0.99, 0.30, 0.96],
    }
    for token, values in lecture.items():
        assert [round(float(table.loc[token, f"P(k,{j})"]), 2) for j in range(4)] == values
    # The first view is the table alone: no other section computes or draws.
    assert len(at.get("vega_lite_chart")) == 0
    at = app(PAGE, section="Relative position").run()
    assert float(find_metric(at, "max |PE(p).PE(q)").value) < 1e-9
    assert float(find_metric(at, "max |PE(p+5)").value) < 1e-9
    assert any("not monotone" in c.value for c in at.caption)


def test_paper_base_and_odd_inputs(app):
    at = app(PAGE, section="Relative position", positions="2", k="100", d_model="16").run()
    assert not at.exception and not at.error
    # k is clamped to the range the positions allow.
    assert find_metric(at, "max |PE(p+1)")
    at = app(PAGE, n="10000", d="8").run()
    at.text_input[0].input("   ").run()
    assert not at.exception
    assert any("Type a sentence" in i.value for i in at.info)


def test_dims_in_url(app):
    at = app(PAGE, section="Waves", dims="3,1,2").run()
    assert at.multiselect(key="dims").value == [1, 2, 3]
    bad = app(PAGE, section="Waves", dims="1,x").run()
    assert "dims" in " ".join(w.value for w in bad.warning)


def test_every_section_opens_and_a_switch_keeps_the_shared_settings(app):
    from tests.app.conftest import open_section
    from ui.specs.sinusoidal_encoding import SPEC

    at = app(PAGE, positions="50", d_model="64").run()
    for label in SPEC.sections:
        open_section(at, label)
        assert not at.exception and not at.error, label
        if label != "Table":
            assert at.slider(key="positions").value == 50
            assert at.query_params["positions"] == "50"
    # Only the open section draws: the matrix section is one image, nothing else.
    open_section(at, "Matrix")
    assert len(at.get("vega_lite_chart")) == 1


def test_unknown_section_warns_and_opens_the_first(app):
    at = app(PAGE, section="<b>www.evil.com</b>").run()
    warning = " ".join(w.value for w in at.warning)
    assert "section" in warning and "`" in warning  # echoed as code, never a link
    assert at.dataframe  # the table, the first section


def test_seeds_only_where_something_is_random(app, monkeypatch):
    """The formula sections take no seeds (the URL's Seeds changes nothing there);
    Alternatives and Embeddings run them, every frame under a seed column."""
    import io

    import pandas as pd

    import ui.views
    from tests.app.conftest import find_caption

    seen = {}
    original = ui.views.csv_button

    def record(df, name, label="Download CSV"):  # noqa: ANN001, ANN202
        seen[name] = df.copy() if isinstance(df, pd.DataFrame) else pd.read_csv(io.BytesIO(df))
        original(df, name, label)

    monkeypatch.setattr(ui.views, "csv_button", record)
    at = app(PAGE, section="Relative position", seeds="5", positions="20").run()
    assert not at.exception and not at.error
    assert "seed" not in seen["similarity_by_offset"].columns
    for section, csv, words in (
        ("Embeddings", "embedding_vs_position", "Token embeddings"),
        ("Alternatives", "encoding_norms", "Norm per position"),
    ):
        for n in ("5", "1"):
            at = app(PAGE, section=section, seeds=n, positions="20", d_model="16").run()
            assert not at.exception and not at.error, (section, n)
            assert sorted(set(seen[csv]["seed"])) == list(range(int(n))), (section, n)
            cap = find_caption(at, words)
            # The line and band's words, as the library words them for these seeds.
            assert band_words(range(int(n))) in cap, cap
    # The heatmaps are one seed's (no band on a picture): the first, named.
    assert "seed" not in seen["similarity_learned"].columns
    assert find_caption(at, "Random at init").startswith(
        "Random at init (N(0, 0.02²) per entry): in seed 0's table"
    )
