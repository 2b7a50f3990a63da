"""Sinusoidal encoding: the table, the waves, and why it encodes relative position.

Each section is one recipe of ``resviz.positional.recipes``; this page draws and
words what it returns."""

import streamlit as st

import resviz as rv
from resviz.positional import headline as H
from resviz.positional import recipes as R
from resviz.positional import words as W
from resviz.positional.settings import Encoding, Shift, Table, Waves
from resviz.words.headline import Figure
from resviz.words.seeds import band_words
from ui.headline import headline, slot
from ui.params import PageParams, md_escape
from ui.section import Section
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
dev = str(ctx.device)


def shared_settings() -> Encoding:
    """The settings the sections after the table share, drawn at the top of each; they
    keep their values (and their place in the URL) while another section is open."""
    return p.draw(Encoding, columns=3)


def table_section() -> None:
    """Your sentence's table, value by value."""
    st.subheader("Your sentence, value by value")
    top = slot()
    text = p.widget("text")
    c1, c2, c3 = st.columns(3)
    with c1:
        d = p.widget("d")
    with c2:
        n = p.widget("n")
    with c3:
        dec = p.widget("dec")
    sec = Section(TITLE, S.TABLE, dev)
    r = sec.run(R.table, Table(text=text, d=d, n=n, dec=dec))
    if r.truncated:
        st.info(f"Only the first {R.MAX_WORDS} words are tabulated.")
    if not r.words:
        st.info("Type a sentence to see its table (words are split at whitespace).")
        return
    headline(H.table(int(r.words), r.formulas), at=top)
    config = {
        f"P(k,{f.j})": st.column_config.NumberColumn(
            f"P(k,{f.j})",
            help=f"{f.label}: pair i={f.i}, {rv.format_number(f.frequency)} rad per position",
            format=f"%.{dec}f",
        )
        for f in r.formulas.itertuples()
    }
    sec.table(
        r,
        "table",
        "positional_table",
        caption=W.rounding_words(dec, r.hidden, r.smallest_hidden),
        column_config=config,
    )
    st.caption(
        "Column formulas: "
        + ", ".join(f"j={f.j}: {md_escape(f.label, 40)}" for f in r.formulas.itertuples())
    )
    sec.download("sinusoidal_table")


def matrix_section() -> None:
    """The whole matrix as one image."""
    st.subheader("The whole matrix")
    top = slot()
    s = shared_settings()
    sec = Section(TITLE, S.MATRIX, dev)
    r = sec.run(R.matrix, s, large=True)
    headline(H.matrix(s.positions, r.last_angle), at=top)
    sec.chart(
        "image_heatmap",
        r,
        "matrix",
        "positional_matrix",
        account="Red +1, white 0, blue -1. Each row is one position's vector. The waves slow "
        "down from left to right: " + W.last_pair_words(s.positions, s.d, r.last_angle),
        index="k",
        title=f"P(k, j): {s.positions} x {s.d}, n = {s.n:g}",
        x_title="dimension j",
        y_title="position k",
        vmin=-1.0,
        vmax=1.0,
    )
    sec.download("sinusoidal_matrix")


def waves_section() -> None:
    """Chosen columns against position, and every pair's wavelength."""
    st.subheader("The waves")
    top = slot()
    s = shared_settings()
    dims = p.widget("dims")
    sec = Section(TITLE, S.WAVES, dev)
    r = sec.run(R.waves, s, Waves(dims=tuple(dims)))
    headline(H.waves(r.wavelengths), at=top)
    if r.beyond:
        st.info(
            f"Columns {', '.join(map(str, r.beyond))} are beyond d_model = {s.d} "
            f"(columns 0 to {s.d - 1}): not drawn."
        )
    if len(r.waves):
        sec.chart(
            "line",
            r,
            "waves",
            "waves",
            x="position",
            y="value",
            color="dimension",
            points=False,
            y_title="P(k, j)",
        )
    else:
        st.info("Pick a column j below d_model to draw its wave.")
    wl = r.wavelengths
    pairs = len(wl)
    sec.chart(
        "line",
        r,
        "wavelengths",
        "wavelengths",
        caption=f"Wavelength 2π·n^(2i/d): a geometric progression from 2π = 6.28 up to "
        f"{rv.format_number(wl['wavelength'].iloc[-1])} for pair {pairs - 1}. A straight line "
        "on a log axis.",
        x="i",
        y="wavelength",
        color=None,
        log_y=True,
        points=pairs <= 64,
        x_title="pair i (columns 2i, 2i+1)",
        y_title="wavelength (log)",
    )
    sec.download("sinusoidal_waves")


def relative_section() -> None:
    """Dot products depend on the offset only; a shift is a rotation."""
    st.subheader("Relative position")
    top = slot()
    s = shared_settings()
    k = p.widget("k")
    sec = Section(TITLE, S.RELATIVE, dev)
    r = sec.run(R.relative, s, Shift(k=k), large=True)
    figures = (
        Figure("max |PE(p).PE(q) - PE(0).PE(|p-q|)|", rv.format_number(r.offset_error)),
        Figure(f"max |PE(p+{r.k}) - R_{r.k} PE(p)|", rv.format_number(r.rotation_error)),
    )
    headline(H.relative(r.offset_error, r.rises, len(r.by_offset), figures), at=top)
    c1, c2 = st.columns([3, 2])
    with c1:
        sec.chart(
            "image_heatmap",
            r,
            "dot",
            "dot_products",
            index="p",
            title="PE(p) . PE(q) for every pair of positions",
            x_title="position q",
            y_title="position p",
            height=360,
        )
    with c2:
        st.caption(
            "The dot product depends only on the offset p - q: sum over i of "
            "cos((p - q) w_i). Every diagonal of the heatmap is constant, to within the "
            "first measured gap at the top of this section."
        )
        st.caption(
            "A shift by k is a rotation: each (sin, cos) pair turns by the angle k w_i, the "
            "same for every p. R_k is block-diagonal with 2x2 blocks [[cos, sin], [-sin, cos]] "
            "(k w_i)." + (f" k is {r.k} here: at most positions - 1." if r.k < k else "")
        )
    sec.code(
        "print('max |PE(p).PE(q) - PE(0).PE(|p-q|)| =', rv.format_number(r.offset_error))\n"
        "print(f'max |PE(p+{r.k}) - R_{r.k} PE(p)| =', rv.format_number(r.rotation_error))"
    )
    sec.chart(
        "line",
        r,
        "by_offset",
        "similarity_by_offset",
        account=f"Largest at offset 0 (= d/2 = {s.d // 2}). "
        + W.monotone_words(len(r.by_offset), r.rises, r.first_rise),
        x="offset",
        y="dot",
        color=None,
        points=False,
        x_title="offset |p - q|",
        y_title="PE(0) . PE(offset)",
    )
    sec.download("sinusoidal_relative")


BLURBS = {
    "sinusoidal": "Fixed waves; similarity depends on the offset only.",
    "integer_index": "k itself in every column: every vector but position 0's (the zero "
    "vector, grey) points the same way (cosine 1), and the norm k·sqrt(d) grows with k, soon "
    "far above a word embedding's (about sqrt(d)).",
    "rope": "Rotary (Su et al. 2021): rotates each token's query and key by its position, so "
    "their score depends on the offset only. Drawn: the cosine of one random vector, "
    "rotated as query at p and as key at q.",
}


def alternatives_section() -> None:
    """Integer index, learned and RoPE beside the sinusoids."""
    st.subheader("Alternatives, side by side")
    top = slot()
    s = shared_settings()
    sec = Section(TITLE, S.ALTERNATIVES, dev)
    # The maps are drawn (and offered) from the first seed: only the norms' CSV is
    # made from the whole result.
    r = sec.run(R.alternatives, s, large=True, csv_frames=("norms",), seed=ctx.seed)
    headline(H.alternatives(r.norms, s.d), at=top)
    if r.shown < s.positions:
        st.caption(f"The first {r.shown} of the {s.positions} positions.")
    runs = r.per_seed
    first = r.seeds[0] if r.seeds else ctx.seed
    blurbs = {
        **BLURBS,
        "learned": W.learned_spread_words(
            [x.learned_mean for x in runs], [x.learned_std for x in runs], s.d, r.seeds
        ),
    }
    blurbs["rope"] += f" The vector of seed {first}."
    # A heatmap has no band: each map is the first seed's (the two formulas are the
    # same in every seed).
    cols = st.columns(2) + st.columns(2)
    for col, (frame, name) in zip(cols, R.SCHEMES.items(), strict=True):
        with col:
            sec.chart(
                "image_heatmap",
                runs[0],
                frame,
                f"similarity_{frame}",
                # The learned table's words quote every seed's numbers: folded.
                caption=None if frame == "learned" else blurbs[frame],
                account=blurbs[frame] if frame == "learned" else None,
                index="p",
                title=name,
                x_title="q",
                y_title="p",
                vmin=-1.0,
                vmax=1.0,
                height=220,
                legend_title="cosine",
                var="r.per_seed[0]",
            )
    sec.chart(
        "line",
        r,
        "norms",
        "encoding_norms",
        account=f"Norm per position. Sinusoidal stays at sqrt(d/2) = "
        f"{rv.format_number((s.d / 2) ** 0.5)}; the integer index grows as k·sqrt(d), "
        "without bound (its norm at position 0 is 0, which a log axis cannot show: the "
        "triangle at the bottom marks it). The learned table's norm is a random draw. "
        + band_words(r.seeds),
        x="position",
        y="norm",
        color="scheme",
        log_y=True,
        points=False,
        y_title="||PE(k)|| (log)",
    )
    sec.download("sinusoidal_alternatives")


def embeddings_section() -> None:
    """The positional part beside word embeddings."""
    st.subheader("Adding it to the word embeddings")
    top = slot()
    s = shared_settings()
    sec = Section(TITLE, S.EMBEDDINGS, dev)
    r = sec.run(R.embeddings, s, seed=ctx.seed)
    headline(H.embeddings([x.parts for x in r.per_seed], r.seeds or (ctx.seed,)), at=top)
    shown = "" if r.shown == s.positions else f" (the first {r.shown} positions)"
    sec.chart(
        "line",
        r,
        "parts",
        "embedding_vs_position",
        account="Token embeddings drawn as nn.Embedding does at init (N(0, 1) per coordinate, "
        "norm about sqrt(d)) versus the positional part (norm sqrt(d/2)). The encoding is added, "
        "not concatenated: ||e + p||² = ||e||² + ||p||² + 2 e·p, and for a random e the term "
        "2 e·p has mean 0 and standard deviation 2||p|| = sqrt(2d), small beside ||e||² ≈ d "
        f"when d is large. Here{shown} the sum's norm differs from sqrt(||e||² + ||p||²) by "
        f"{W.pythagoras_seeds_words([x.parts for x in r.per_seed], r.seeds)}. "
        + band_words(r.seeds),
        x="position",
        y="norm",
        color="part",
        points=False,
        y_title="norm",
    )
    sec.download("sinusoidal_embeddings")


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
            section()
