"""Sinusoidal encoding: the table, the waves, and why it encodes relative position."""

import math

import pandas as pd
import streamlit as st

import resviz as rv
from resviz import positional as P
from ui import cache, charts, views
from ui.notebook import Notebook, literal
from ui.params import PageParams, md_escape
from ui.shell import page_setup
from ui.specs import sinusoidal_encoding as S

TITLE = "Sinusoidal encoding"
ctx = page_setup(
    TITLE,
    "A transformer sees a set of tokens; the positional encoding tells it where each one "
    "stands. Position k gets a vector whose column pair (2i, 2i+1) holds the sine and cosine "
    "of k / n^(2i/d): fast waves in the first columns, slow ones in the last (Vaswani et al. "
    "2017, section 3.5).",
)
st.latex(
    r"P(k, 2i) = \sin\!\left(\frac{k}{n^{2i/d}}\right),\qquad "
    r"P(k, 2i+1) = \cos\!\left(\frac{k}{n^{2i/d}}\right)"
)
p = PageParams("sinusoidal_encoding")
tabs = p.sections()

# The settings the sections after the table share, drawn at the top of each; they
# keep their values (and their place in the URL) while another section is open.
n_pos, d_model, base = 100, 512, 10000.0


def shared_settings() -> None:
    global n_pos, d_model, base
    c1, c2, c3 = st.columns(3)
    with c1:
        n_pos = p.slider("positions", "positions")
    with c2:
        d_model = int(p.select("d_model", "d_model"))
    with c3:
        base = float(p.select("base", "base"))


def table_section() -> None:
    """Your sentence's table, value by value."""
    st.subheader("Your sentence, value by value")
    sentence = p.text("Sentence (split on spaces)", "text")
    c1, c2, c3 = st.columns(3)
    with c1:
        d_table = p.slider("d (columns, even)", "d")
    with c2:
        n_table = p.number("base n", "n", help="100 in the lecture notes, 10000 in the paper")
    with c3:
        decimals = p.slider("decimals", "dec")

    tokens, truncated = P.tokenize_words(sentence, max_tokens=64)
    if truncated:
        st.info("Only the first 64 words are tabulated.")
    if tokens:
        table = P.encoding_table(tokens, d_table, float(n_table)).round(decimals)
        formulas = P.column_formulas(d_table, float(n_table))
        config = {
            f"P(k,{r.j})": st.column_config.NumberColumn(
                f"P(k,{r.j})",
                help=f"{r.label}: pair i={r.i}, frequency {r.frequency:.4g}",
                format=f"%.{decimals}f",
            )
            for r in formulas.itertuples()
        }
        views.table(table, "positional_table", column_config=config)
        nb = Notebook(TITLE, S.TABLE, st.query_params.to_dict())
        nb.code(
            f"text = {literal(sentence)}\n"
            f"d, n, decimals = {d_table}, {n_table}, {decimals}\n"
            "tokens, truncated = rv.positional.tokenize_words(text, max_tokens=64)\n"
            "table = rv.positional.encoding_table(tokens, d, float(n)).round(decimals)\n"
            "table"
        ).frame("positional_table", "table")
        nb.download("sinusoidal_table")
        st.caption(
            "Column formulas: "
            + ", ".join(f"j={r.j}: {md_escape(r.label, 40)}" for r in formulas.itertuples())
        )
    else:
        st.info("Type a sentence to see its table (the words are split on spaces).")


def slowest_pair(n: int, d: int, b: float) -> str:
    """How far the first and the last (sin, cos) pair turn over positions 0..n-1."""
    span = n - 1
    angle = span / b ** ((d - 2) / d)
    first = f"over these {n} positions the first pair (columns 0, 1) turns through {span} rad"
    first += f" ({rv.format_number(span / (2 * math.pi))} turns)"
    last = f"the last pair (columns {d - 2}, {d - 1}) through {rv.format_number(angle)} rad"
    if angle <= math.pi / 2:
        return (
            f"{first}, {last} only, so its sine stays below "
            f"{rv.format_number(math.sin(angle))} and its cosine within "
            f"{rv.format_number(1 - math.cos(angle))} of 1."
        )
    return f"{first}, {last} ({rv.format_number(angle / (2 * math.pi))} turns)."


def matrix_section() -> None:
    """The whole matrix as one image."""
    st.subheader("The whole matrix")
    views.chart(
        cache.image_chart(
            (n_pos, d_model, base),
            "pe",
            title=f"P(k, j): {n_pos} positions x {d_model} dimensions, n = {base:g}",
            x_title="dimension j",
            y_title="position k",
            vmin=-1.0,
            vmax=1.0,
        ),
        cache.matrix_csv(n_pos, d_model, base),
        "positional_matrix",
        caption="Red +1, white 0, blue -1. Each row is one position's vector. The waves slow down "
        "from left to right: " + slowest_pair(n_pos, d_model, base),
    )
    nb = Notebook(TITLE, S.MATRIX, st.query_params.to_dict())
    nb.code(
        f"n_pos, d_model, base = {n_pos}, {d_model}, {base!r}\n"
        "matrix = rv.positional.encoding_frame(n_pos, d_model, base)\n"
        "pe = rv.sinusoidal_encoding(n_pos, d_model, base).numpy()\n"
        "rv.charts.image_heatmap(pe, title=f'P(k, j): {n_pos} positions x {d_model} dimensions', "
        "x_title='dimension j', y_title='position k', vmin=-1.0, vmax=1.0)"
    ).frame("positional_matrix", "matrix")
    nb.download("sinusoidal_matrix")


def waves_section() -> None:
    """Chosen columns against position, and every pair's wavelength."""
    st.subheader("The waves")
    dims = p.multi_int(
        "dimensions to plot",
        "dims",
        range(d_model),
        help="Pick up to 8 columns j to draw against position.",
    )
    dims = [j for j in dims if j < d_model]
    pairs = d_model // 2
    if dims:
        waves = P.waves_long(n_pos, d_model, base, dims=sorted(dims))
        waves["dimension"] = "j=" + waves["dim"].astype(str)
        views.chart(
            charts.line(waves, "position", "value", "dimension", points=False, y_title="P(k, j)"),
            waves[["position", "dim", "value"]],
            "waves",
        )
    wl = P.wavelengths(d_model, base)
    views.chart(
        charts.line(
            wl,
            "i",
            "wavelength",
            None,
            log_y=True,
            points=pairs <= 64,
            x_title="pair i (columns 2i, 2i+1)",
            y_title="wavelength (log)",
        ),
        wl,
        "wavelengths",
        caption=f"Wavelength 2π·n^(2i/d): a geometric progression from 2π = 6.28 up to "
        f"{wl['wavelength'].iloc[-1]:.4g} for pair {pairs - 1}. A straight line on a log axis.",
    )
    nb = Notebook(TITLE, S.WAVES, st.query_params.to_dict())
    nb.code(
        f"n_pos, d_model, base, dims = {n_pos}, {d_model}, {base!r}, {literal(sorted(dims))}\n"
        "waves = rv.positional.waves_long(n_pos, d_model, base, dims=dims)\n"
        "waves_csv = waves[['position', 'dim', 'value']]\n"
        "waves['dimension'] = 'j=' + waves['dim'].astype(str)\n"
        "rv.charts.line(waves, 'position', 'value', 'dimension', points=False, y_title='P(k, j)')"
    )
    nb.code(
        "wl = rv.positional.wavelengths(d_model, base)\n"
        "rv.charts.line(wl, 'i', 'wavelength', None, log_y=True, "
        "x_title='pair i (columns 2i, 2i+1)', y_title='wavelength (log)')"
    )
    if dims:
        nb.frame("waves", "waves_csv")
    nb.frame("wavelengths", "wl").download("sinusoidal_waves")


def relative_section() -> None:
    """Dot products depend on the offset only; a shift is a rotation."""
    st.subheader("Relative position")
    k_shift = min(p.slider("shift k", "k"), n_pos - 1)
    sim = cache.position_similarity(n_pos, d_model, base)
    c1, c2 = st.columns([3, 2])
    with c1:
        views.chart(
            cache.image_chart(
                (n_pos, d_model, base),
                "dot",
                title="PE(p) . PE(q) for every pair of positions",
                x_title="position q",
                y_title="position p",
                height=360,
            ),
            sim["by_offset"],
            "dot_by_offset",
        )
    with c2:
        st.metric("max |PE(p).PE(q) - PE(0).PE(|p-q|)|", f"{sim['offset_error']:.2e}")
        st.caption(
            "The dot product depends only on the offset p - q: sum over i of "
            "cos((p - q) w_i). Every diagonal of the heatmap is constant."
        )
        err = P.rotation_error(n_pos, d_model, base, min(k_shift, n_pos - 1))
        st.metric(f"max |PE(p+{k_shift}) - R_{k_shift} PE(p)|", f"{err:.2e}")
        st.caption(
            "A shift by k is a rotation: each (sin, cos) pair turns by the angle k w_i, the same "
            "for every p. R_k is block-diagonal with 2x2 blocks [[cos, sin], [-sin, cos]] (k w_i)."
        )
    by_off = sim["by_offset"]
    rises = by_off["offset"][by_off["dot"].diff() > 1e-9].tolist()
    if rises:
        monotone_note = (
            f"It is not monotone in distance: it rises again at {len(rises)} offsets (first at "
            f"{rises[0]}), so a farther position can look more similar than a nearer one."
        )
    else:
        monotone_note = (
            f"Over these {len(by_off)} offsets it happens to fall monotonically; at some larger "
            "offset it rises again, since a sum of cosines keeps coming back close to its value at 0."
        )
    views.chart(
        charts.line(
            by_off,
            "offset",
            "dot",
            None,
            points=False,
            x_title="offset |p - q|",
            y_title="PE(0) . PE(offset)",
        ),
        by_off,
        "similarity_by_offset",
        caption=f"Largest at offset 0 (= d/2 = {d_model // 2}). {monotone_note}",
    )
    nb = Notebook(TITLE, S.RELATIVE, st.query_params.to_dict())
    nb.code(
        f"n_pos, d_model, base, k = {n_pos}, {d_model}, {base!r}, {k_shift}\n"
        "import torch\n"
        "pe = rv.sinusoidal_encoding(n_pos, d_model, base, dtype=torch.float64)\n"
        "by_offset = rv.positional.similarity_by_offset(pe)\n"
        "print('max |PE(p).PE(q) - PE(0).PE(|p-q|)| =', rv.positional.offset_dependence(pe))\n"
        "print(f'max |PE(p+{k}) - R_{k} PE(p)| =', "
        "rv.positional.rotation_error(n_pos, d_model, base, k))\n"
        "rv.charts.line(by_offset, 'offset', 'dot', None, points=False, "
        "x_title='offset |p - q|', y_title='PE(0) . PE(offset)')"
    )
    nb.frame("dot_by_offset", "by_offset").frame("similarity_by_offset", "by_offset")
    nb.download("sinusoidal_relative")


def alternatives_section() -> None:
    """Integer index, learned and RoPE beside the sinusoids."""
    st.subheader("Alternatives, side by side")
    alt_n = min(n_pos, 256)
    mats = cache.similarity_matrices(alt_n, d_model, base, ctx.seed)
    cols = st.columns(2) + st.columns(2)
    blurbs = {
        "sinusoidal": "Fixed waves; similarity depends on the offset only.",
        "integer index": "k itself in every column: every vector but position 0's (the zero "
        "vector, grey) points the same way (cosine 1), and the norm k·sqrt(d) grows with k, soon "
        "far above a word embedding's (about sqrt(d)).",
        "learned (init)": "Random at init: no structure until training puts some there.",
        "RoPE": "Rotary (Su et al. 2021): rotates each token's query and key by its position, so "
        "their score depends on the offset only. Drawn: the cosine of one fixed random vector, "
        "rotated as query at p and as key at q.",
    }
    for col, name in zip(cols, mats, strict=True):
        with col:
            views.altair(
                cache.image_chart(
                    (alt_n, d_model, base, ctx.seed),
                    f"alt:{name}",
                    title=name,
                    x_title="q",
                    y_title="p",
                    vmin=-1.0,
                    vmax=1.0,
                    height=220,
                    legend_title="cosine",
                ),
                width="stretch",
            )
            st.caption(blurbs[name])
    norms = cache.encoding_norms(alt_n, d_model, ctx.seed)
    views.chart(
        charts.line(
            norms, "position", "norm", "scheme", log_y=True, points=False, y_title="||PE(k)|| (log)"
        ),
        norms,
        "encoding_norms",
        caption=f"Norm per position. Sinusoidal stays at sqrt(d/2) = {(d_model / 2) ** 0.5:.3g}; the "
        "integer index grows as k·sqrt(d), without bound.",
    )
    nb = Notebook(TITLE, S.ALTERNATIVES, st.query_params.to_dict())
    nb.code(
        f"n_pos, d_model, base, seed = {alt_n}, {d_model}, {base!r}, {ctx.seed}\n"
        "P = rv.positional\n"
        "mats = P.similarity_matrices(n_pos, d_model, base, seed)\n"
        "norms = P.encoding_norms({\n"
        "    'sinusoidal': rv.sinusoidal_encoding(n_pos, d_model),\n"
        "    'integer index': P.integer_index_encoding(n_pos, d_model),\n"
        "    'learned (init)': P.learned_encoding(n_pos, d_model, seed=seed),\n"
        "})\n"
        "rv.charts.line(norms, 'position', 'norm', 'scheme', log_y=True, points=False, "
        "y_title='||PE(k)|| (log)')"
    )
    nb.code(
        "# The four cosine-similarity maps, one image each.\n"
        "[rv.charts.image_heatmap(m.numpy(), title=name, x_title='q', y_title='p', vmin=-1.0, "
        "vmax=1.0, height=220) for name, m in mats.items()]"
    )
    nb.frame("encoding_norms", "norms").download("sinusoidal_alternatives")


def pythagoras_gap(df: pd.DataFrame) -> str:
    """Mean and largest relative gap between ||e + p|| and sqrt(||e||² + ||p||²)."""
    wide = df.pivot(index="position", columns="part", values="norm")
    pyth = (wide["token"] ** 2 + wide["position"] ** 2) ** 0.5
    rel = ((wide["sum"] - pyth).abs() / pyth) * 100
    return (
        f"{rv.format_number(rel.mean(), 2)}% on average and at most "
        f"{rv.format_number(rel.max(), 2)}%"
    )


def embeddings_section() -> None:
    """The positional part beside word embeddings."""
    st.subheader("Adding it to the word embeddings")
    parts = cache.embedding_vs_position(min(n_pos, 256), d_model, base, ctx.seed)

    views.chart(
        charts.line(parts, "position", "norm", "part", points=False, y_title="norm"),
        parts,
        "embedding_vs_position",
        caption="Token embeddings drawn as nn.Embedding does at init (N(0, 1) per coordinate, "
        "norm about sqrt(d)) versus the positional part (norm sqrt(d/2)). The encoding is added, not "
        "concatenated: ||e + p||² = ||e||² + ||p||² + 2 e·p, and for a random e the term e·p has "
        "mean 0 and std ||p||, small beside ||e||² ≈ d when d is large. Here the sum's norm "
        f"differs from sqrt(||e||² + ||p||²) by {pythagoras_gap(parts)}.",
    )
    nb = Notebook(TITLE, S.EMBEDDINGS, st.query_params.to_dict())
    nb.code(
        f"n_pos, d_model, base, seed = {min(n_pos, 256)}, {d_model}, {base!r}, {ctx.seed}\n"
        "parts = rv.positional.embedding_vs_position(1000, d_model, n_pos, seed=seed, base=base)\n"
        "rv.charts.line(parts, 'position', 'norm', 'part', points=False, y_title='norm')"
    ).frame("embedding_vs_position", "parts").download("sinusoidal_embeddings")


for tab, section in zip(
    tabs,
    (
        table_section,
        matrix_section,
        waves_section,
        relative_section,
        alternatives_section,
        embeddings_section,
    ),
    strict=True,
):
    if tab.open:
        with tab:
            if section is not table_section:
                shared_settings()
            section()
