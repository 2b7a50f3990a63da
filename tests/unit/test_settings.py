"""Groups of settings (resviz/settings.py): declared once, taken whole or by name by a
recipe, over seeds included."""

from __future__ import annotations

import inspect
from dataclasses import dataclass

import pandas as pd
import pytest

from resviz.core import Result, recipe, settings_of
from resviz.settings import Settings, choice, decimal, flag, whole, whole_numbers


@dataclass(frozen=True)
class Toy(Settings):
    depth: int = whole(10, 1, 100, label="Depth")
    act: str = choice("tanh", ("tanh", "relu"), label="Activation")


@dataclass(frozen=True)
class Knob(Settings):
    scale: float = decimal(0.5, 0.0, 1.5, step=0.05, label="λ")
    on: bool = flag(False, label="On")


def _toy(toy: Toy = Toy(), knob: Knob = Knob(), *, seed: int = 0) -> Result:
    row = {"depth": toy.depth, "act": toy.act, "scale": knob.scale, "on": knob.on}
    return Result({"f": pd.DataFrame([{**row, "x": seed * 10 + toy.depth}])})


toy = recipe(_toy, seeds=2)


def test_a_recipe_lists_its_groups_fields_as_its_settings():
    assert settings_of(toy) == {
        "depth": 10, "act": "tanh", "scale": 0.5, "on": False, "seeds": 2, "seed": 0
    }  # fmt: skip
    kinds = {p.kind for p in inspect.signature(toy).parameters.values()}
    assert kinds == {inspect.Parameter.KEYWORD_ONLY}


def test_a_group_whole_by_position_by_name_or_its_fields_make_one_call():
    a = toy(Toy(depth=30), seed=1, seeds=1).f
    b = toy(toy=Toy(depth=30), seed=1, seeds=1).f
    c = toy(depth=30, seed=1, seeds=1).f
    for other in (b, c):
        pd.testing.assert_frame_equal(a, other)
    assert a["x"].tolist() == [40]  # seed 1's 10, plus depth 30
    # A field by name overrides its group's.
    assert toy(Toy(depth=30), depth=5, seeds=1).f["depth"].tolist() == [5]
    # Two groups, in either order; over two seeds, each seed sees the same groups.
    two = toy(Knob(scale=1.0), Toy(act="relu"), seed=3).f
    assert two["seed"].tolist() == [3, 4] and two["x"].tolist() == [40, 50]
    assert set(two["scale"]) == {1.0} and set(two["act"]) == {"relu"}


def test_a_wrong_group_or_an_unknown_name_is_refused():
    with pytest.raises(TypeError, match="takes Toy, Knob as settings"):
        toy(3)
    with pytest.raises(TypeError):
        toy(dpeth=3)


def test_declarations_hold_the_widget_and_check_values():
    (depth, act) = Toy.declared()
    assert (depth.name, depth.default, depth.setting.lo, depth.setting.hi) == ("depth", 10, 1, 100)
    assert depth.setting.parse("30") == 30 and act.setting.check("relu") == "relu"
    with pytest.raises(ValueError, match="outside 1 to 100"):
        depth.setting.parse("300")
    with pytest.raises(ValueError, match="not one of"):
        act.setting.check("sin")
    assert Knob.declared()[0].setting.parse("0.30000000000000004") == 0.3
    assert Toy(depth=7).values() == {"depth": 7, "act": "tanh"}


def test_a_default_the_widget_cannot_hold_is_refused_at_declaration():
    with pytest.raises(ValueError, match="outside 1 to 5"):
        whole(10, 1, 5, label="x")
    with pytest.raises(ValueError, match="not among the choices"):
        whole_numbers((1, 3), (1, 3, 5), 2, label="x") and whole_numbers(
            (2,), (1, 3, 5), 1, label="x"
        )
