"""Build static/fonts/language-names.woff2: the glyphs of the language switcher's non-Latin names (translations.
LANGUAGES) cut from Noto Sans CJK SC (SIL Open Font License 1.1), so the switcher reads on a machine with no CJK
font. Run: python vendor/language_font.py PATH/TO/NotoSansCJK-Regular.ttc (Debian's fonts-noto-cjk)."""
from __future__ import annotations

import sys
from pathlib import Path

from fontTools import subset
from fontTools.ttLib import TTCollection

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from translations import LANGUAGES  # noqa: E402

OUT = ROOT / "static" / "fonts" / "language-names.woff2"
SIMPLIFIED_CHINESE = "Noto Sans CJK SC"


def language_characters() -> str:
    """The characters of the languages' own names that are not ASCII, in order."""
    return "".join(sorted({c for name in LANGUAGES.values() for c in name if ord(c) > 127}))


def build(collection: Path, out: Path = OUT) -> None:
    """Write the subset of the collection's Simplified Chinese face as WOFF2."""
    fonts = TTCollection(str(collection)).fonts
    font = next(f for f in fonts if f["name"].getDebugName(4) == SIMPLIFIED_CHINESE)
    options = subset.Options(flavor="woff2", name_IDs=["*"], name_languages=["*"], layout_features=[])
    subsetter = subset.Subsetter(options)
    subsetter.populate(text=language_characters())
    subsetter.subset(font)
    out.parent.mkdir(parents=True, exist_ok=True)
    font.flavor = "woff2"
    font.save(str(out))


if __name__ == "__main__":
    build(Path(sys.argv[1]))
    print(f"{OUT.relative_to(ROOT)}: {OUT.stat().st_size} bytes, {language_characters()}")
