"""The Pretrained models page's groups of settings (resviz/pretrained/cache.py,
heal_sections.py; the page's own Prompts in ui/specs): a recipe takes a group or its
fields by name alike, and each group turns into what the library needs."""

import pytest

pytest.importorskip("transformers")

import resviz as rv  # noqa: E402
from resviz.pretrained import recipes as R  # noqa: E402
from ui.specs import pretrained as S  # noqa: E402


def test_a_group_and_its_fields_by_name_make_the_same_call():
    a = R.rank_collapse(rv.pretrained.Checkpoint(), rv.pretrained.Reading("O thou"))
    b = R.rank_collapse(model=R.TINY, text="O thou")
    assert a.collapse.equals(b.collapse)
    target = rv.pretrained.Target(position=2)
    c = R.logit_attribution(target, reading=rv.pretrained.Reading("O thou my lovely"))
    d = R.logit_attribution(position=2, text="O thou my lovely")
    assert c.parts.equals(d.parts) and c.position == d.position == 2


def test_a_path_goes_with_a_folder_only():
    typed = rv.pretrained.Checkpoint(model=R.TINY, path="/somewhere")
    assert typed.picked() == rv.pretrained.Checkpoint()
    folder = rv.pretrained.Checkpoint(model=R.FOLDER, path="/somewhere")
    assert folder.picked() is folder


def test_healing_names_its_deletion_and_bounds_its_steps():
    d = rv.pretrained.Healing(block=2, n_blocks=2, part="mlp").deletion()
    assert (d.first, d.n, d.part) == (2, 2, "mlp")
    with pytest.raises(ValueError, match="steps must be 1 to 500"):
        R.heal(steps=0)


def test_the_pages_prompts_give_the_pair_picked_or_the_typed_one():
    assert S.Prompts().prompts() == R.PAIRS[0]
    assert S.Prompts(pair=S.PAIR_OPTIONS[2]).prompts() == R.PAIRS[2]
    assert S.Prompts(S.OWN_PAIR, "a b", "a c").prompts() == ("a b", "a c")
