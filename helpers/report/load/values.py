"""A value of a record or a table cell as read: missing (``isnull``), a yes (``yes``), a knobs cell as a dict
(``knob_items``)."""

from __future__ import annotations


def isnull(v) -> bool:
    """None or NaN (pandas' missing values included); False for lists, dicts and strings."""
    try:
        import pandas as pd

        return v is None or (not isinstance(v, (list, dict, str)) and bool(pd.isna(v)))
    except (TypeError, ValueError):
        return False


def yes(v) -> bool:
    """A flag cell that says yes (a bool or numpy bool; missing and NaN say no)."""
    return not isnull(v) and not isinstance(v, str) and bool(v)


def knob_items(knobs) -> dict:
    """A record's ``knobs`` cell ('gpus=2, input_dtype=uint8') as a dict; {} for none."""
    if isnull(knobs) or not knobs:
        return {}
    return dict(item.split("=", 1) if "=" in item else (item, "") for item in str(knobs).split(", "))
