"""kinds/figures.py's colours of methods: from each name, never from its position, readable on white."""
from __future__ import annotations

import hashlib
import itertools

from kinds.figures import METHOD_PALETTE, method_colours


def own_colour(name: str) -> str:
    """The colour a name gets alone: the first 16 hex digits of its SHA-256, modulo the palette's size."""
    return METHOD_PALETTE[int(hashlib.sha256(name.encode()).hexdigest()[:16], 16) % len(METHOD_PALETTE)]


def colliding_pair() -> tuple[str, str]:
    """Two method names whose own colour is the same."""
    seen: dict[str, str] = {}
    for i in itertools.count():
        name = f"method-{i}"
        colour = own_colour(name)
        if colour in seen:
            return seen[colour], name
        seen[colour] = name
    raise AssertionError("unreachable")


def test_a_name_alone_gets_its_own_colour():
    for name in ("Base", "CoT", "PersonaSteer", "A", "B", "日本語"):
        assert method_colours([name]) == {name: own_colour(name)}


def test_the_same_method_keeps_its_colour_when_the_order_or_the_set_changes():
    # Base, CoT and PersonaSteer have three different colours of their own, so none is moved by another
    assert len({own_colour(m) for m in ("Base", "CoT", "PersonaSteer")}) == 3
    one = method_colours(["Base", "CoT", "PersonaSteer"])
    assert method_colours(["PersonaSteer", "Base", "CoT"]) == one
    assert method_colours(["CoT", "Base"]) == {"CoT": one["CoT"], "Base": one["Base"]}
    assert method_colours(["PersonaSteer"])["PersonaSteer"] == one["PersonaSteer"]
    assert list(method_colours(["PersonaSteer", "Base"])) == ["PersonaSteer", "Base"]  # keyed in the order given


def test_a_collision_moves_the_later_name_to_the_next_free_colour():
    first, second = colliding_pair()
    assert first < second  # method-<i> with the smaller i sorts first among these (both have the same length)
    slot = METHOD_PALETTE.index(own_colour(first))
    expected = {first: own_colour(first), second: METHOD_PALETTE[(slot + 1) % len(METHOD_PALETTE)]}
    assert method_colours([second, first]) == expected == method_colours([first, second])
    assert method_colours([second]) == {second: own_colour(second)}  # alone, it keeps its own


def test_methods_shown_together_never_share_a_colour_until_the_palette_runs_out():
    names = [f"m{i}" for i in range(len(METHOD_PALETTE))]
    assert len(set(method_colours(names).values())) == len(METHOD_PALETTE)
    more = method_colours([*names, "one more"])
    assert len(more) == len(METHOD_PALETTE) + 1 and set(more.values()) == set(METHOD_PALETTE)


def _luminance(colour: str) -> float:
    """WCAG 2 relative luminance of #rrggbb."""
    channels = [int(colour[i:i + 2], 16) / 255 for i in (1, 3, 5)]
    r, g, b = (c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def test_every_colour_reads_on_white():
    assert len(set(METHOD_PALETTE)) == len(METHOD_PALETTE) == 14
    for colour in METHOD_PALETTE:
        assert 1.05 / (_luminance(colour) + 0.05) >= 3.0, colour  # WCAG 1.4.11: 3:1 for graphics
    # the darkest and lightest: #8A1C3C (about 9.1:1) and #2CA02C (about 3.4:1)
    assert round(1.05 / (_luminance("#2CA02C") + 0.05), 2) == 3.4
