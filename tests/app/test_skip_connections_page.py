"""The skip-connections page: every widget path, the seed network, a training run."""

import resviz as rv
import ui.jobs

PAGE = "pages/skip_connections.py"


def _clean(at):
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


def test_default_view_shows_block_code_signal_and_paths(app):
    at = app(PAGE).run()
    _clean(at)
    table = at.dataframe[0].value
    assert len(table) == 16 and set(table["shortcut"]) == {"identity"}
    code = at.code[0].value
    assert "class Block(nn.Module)" in code and "SEED = 0" in code
    assert len(at.get("vega_lite_chart")) >= 3
    assert any("2^16 = 65,536 paths" in c.value for c in at.caption)
    assert "Train" in [b.label for b in at.button]


def test_seed_network_preset_shows_which_blocks_got_a_shortcut(app):
    at = app(PAGE, preset="seed network 25,25,43,43,54,54").run()
    _clean(at)
    assert at.dataframe[0].value["shortcut"].tolist() == [
        "identity", "none", "identity", "none", "identity",
    ]  # fmt: skip
    at.selectbox(key="skip_connections:mismatch").set_value("project").run()
    _clean(at)
    assert at.dataframe[0].value["shortcut"].tolist() == [
        "identity", "projection", "identity", "projection", "identity",
    ]  # fmt: skip
    assert "nn.Linear(w_in, w_out, bias=False)" in at.code[0].value


def test_modes_toggles_and_inconsistent_settings(app):
    at = app(PAGE, depth="4", width="8").run()
    for mode in ("scaled", "concat", "none", "add"):
        at.selectbox(key="skip_connections:mode").set_value(mode).run()
        _clean(at)
    at.selectbox(key="skip_connections:mode").set_value("scaled").run()
    assert "nn.Parameter(torch.tensor(ALPHA))" in at.code[0].value
    at.toggle(key="skip_connections:learnable").set_value(False).run()
    assert 'register_buffer("alpha"' in at.code[0].value
    at.selectbox(key="skip_connections:mode").set_value("concat").run()
    assert at.dataframe[0].value["out_width"].tolist() == [16, 24, 32, 40]
    at.toggle(key="skip_connections:project").set_value(True).run()
    _clean(at)
    assert at.dataframe[0].value["out_width"].tolist() == [8, 8, 8, 8]
    # Concat cannot join before the activation: a clear message, nothing breaks.
    at.selectbox(key="skip_connections:join").set_value("before_act").run()
    _clean(at)
    assert any("cannot be combined" in w.value for w in at.warning)
    # Concat without projection over 64 blocks of 256 outgrows the width limit.
    bad = app(PAGE, mode="concat", depth="64", width="256").run()
    _clean(bad)
    assert any("grows the width" in w.value for w in bad.warning)


def test_train_then_lesion(app):
    ui.jobs.REGISTRY.clear()
    at = app(PAGE, shallow="1", deep="3", steps="40", l_depth="4", l_steps="100").run()
    _clean(at)
    headers = [h.value for h in at.header]
    assert "5. Lesion study: delete one block" in headers
    assert not any("mean_drop" in d.value.columns for d in at.dataframe)  # nothing trained yet
    at.button(key="degradation:start").click().run()
    assert ui.jobs.REGISTRY.wait(120)
    at.run()
    _clean(at)
    final = next(d.value for d in at.dataframe if "accuracy" in d.value.columns)
    assert sorted(final["variant"]) == sorted(
        ["plain, 1 blocks", "plain, 3 blocks", "residual, 1 blocks", "residual, 3 blocks"]
    )
    assert (final["step"] == 40).all() and final["loss"].gt(0).all()
    # The lesion study trains its own two stacks, on its own button.
    assert not any("mean_drop" in d.value.columns for d in at.dataframe)
    at.button(key="lesion:start").click().run()
    assert ui.jobs.REGISTRY.wait(120)
    at.run()
    _clean(at)
    summary = next(d.value for d in at.dataframe if "mean_drop" in d.value.columns)
    assert summary["variant"].tolist() == ["plain, 4 blocks", "residual, 4 blocks"]
    assert summary["intact"].between(0, 1).all() and summary["worst_block"].between(2, 4).all()
    # The caption is worded from the numbers on screen, whatever they are.
    caption = rv.lesion_caption(summary)
    assert caption in [c.value for c in at.caption]
    assert f"The residual stack (4 blocks, accuracy {summary['intact'].iloc[1]:.2f}" in caption
    ui.jobs.REGISTRY.clear()
