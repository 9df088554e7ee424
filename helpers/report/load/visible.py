"""Text safe for any sink (a page, a CSV cell, a file name, a terminal line): what draws nothing or turns text around
written out (``visible``); a folder as a published page names it (``shown_path``: no machine's paths). ``fmt``
re-exports both: every text shown goes through them.

    visible("mlp\u202e") -> 'mlp\\u202e'
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

from helpers.paths import PROJECT_ROOT
from helpers.report.load.values import isnull

# Safe for no sink: a lone surrogate (a JSON escape "\\ud800", a file name not UTF-8: no UTF-8 holds it); controls
# but tab, LF and CR (C0, DEL, C1: ESC and U+009B begin a terminal's sequences); bidi controls (U+202A-E, U+2066-9,
# U+200E-F, U+061C: "mlp_mnist" + U+202E turns a verdict's figures around); default-ignorable code points (zero-width
# characters, soft hyphen, U+034F, variation selectors, tags, Hangul fillers): they draw nothing, two names look one.
_UNSAFE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5"
                     "\u180b-\u180f\u200b-\u200f\u202a-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufff8"
                     "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e0fff]")
_UNSAFE_LINE = re.compile(_UNSAFE.pattern[:-1] + "\t\n\r]")  # a terminal's line: a carriage return writes over it


def _shown(m) -> str:  # '\ufffd' for a surrogate, else the escape: '\u202e', '\x1b', '\U000e0020'
    return "\ufffd" if 0xD800 <= ord(m.group()) <= 0xDFFF else m.group().encode("unicode_escape").decode("ascii")


def visible(text: str, line: bool = False) -> str:
    """``text`` safe for any sink (page, CSV, file name; ``line``: a terminal line): U+FFFD, ``\\u202e``, ``\\x1b``."""
    return (_UNSAFE_LINE if line else _UNSAFE).sub(_shown, text)


def shown_path(path) -> str:
    """A folder as a report shows it: relative to the project (a published report names no machine's
    paths), else under ``~``, else as given."""
    p = Path(path).resolve()
    for base, prefix in ((PROJECT_ROOT.resolve(), ""), (Path.home().resolve(), "~/")):
        if p.is_relative_to(base):
            return prefix + (p.relative_to(base).as_posix() or ".")
    return str(path)


RECORD_NAME = " (a record's name)"  # after a quoted hardware name that reads like the bundled reference's


REFERENCE_WORD = "reference"  # the bundled reference's machine names begin with it (reference.PREFIX)


# letters of other scripts (and Latin small capitals) drawn like Latin ones: the check reads them as those
_LOOKALIKE = str.maketrans(
    "АВЕЅІЈКМНОРСТХУаеіјосрхуѕԁԛԝһӏвкмнтгԌԍαβγεηικμνορτυχωΑΒΕΖΗΙΚΜΝΟΡΤΥΧϲϳօոսհզɑɡɩıʀᴀʙᴄᴅᴇꜰɢʜɪᴊᴋʟᴍɴᴏᴘꜱᴛᴜᴠᴡʏᴢ"
    "ᎡᎬᏒᎪᏴᏟᎻᎢᏚᏞᎷᏀ",
    "ABESIJKMHOPCTXYaeijocpxysdqwhlbkmhtrGgabyenikuvoptuxwABEZHIKMNOPTYXcjonuhqagiirabcdefghijklmnopstuvwyz"
    "RERABCHTSLMG")


def skeleton(text) -> str:
    """``text`` as the check for the bundled reference's name reads it: NFKC-folded ('ｒｅｆ', '𝐫𝐞𝐟': 'ref'), accents
    and every invisible or format character dropped (soft hyphen, U+034F, variation selectors, tags, Hangul fillers,
    and their escapes' backslashes), look-alike letters of other scripts read as the Latin ones (Cyrillic 'е',
    Greek 'ο'), lower case; only Latin letters and digits kept."""
    folded = unicodedata.normalize("NFKD", unicodedata.normalize("NFKC", str(text))).translate(_LOOKALIKE)
    return "".join(c for c in folded.casefold() if c.isascii() and c.isalnum())


def hardware_name(raw) -> str:
    """A record's hardware (GPU or CPU model) as every part of the report names it (the machine column, so every
    table, chart, CSV and verdict row; the opening sentence; short names): as recorded (``visible``), but where
    its ``skeleton`` holds "reference", in quotes and said to be a record's name, whatever hides the word. The
    bundled reference is told by its files (``reference.is_reference``), never by a name."""
    text = visible("" if isnull(raw) else str(raw))
    if REFERENCE_WORD not in skeleton(text) or (text.startswith("“") and text.endswith("”" + RECORD_NAME)):
        return text  # not the reference's word, or named so already
    return f"“{text}”{RECORD_NAME}"
