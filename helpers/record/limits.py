"""Bounds on the size of a record read back, whatever its fields: what one record may cost the report.

    why = out_of_bounds(obj)   # None: within bounds; else why not, e.g. "a string longer than 16384 characters"

A record is a few kB (the largest published one: 68 kB, about 3,300 values, its longest string a 2-kB
traceback). The file cap (``record.MAX_RECORD_BYTES``) alone does not bound what a record costs the report: a
111-kB record whose workload name has 100,000 characters took minutes to chart, 20,000 params keys too, and
an integer of 400 digits is no float at all (``float(10**400)`` raises). One walk of the parsed JSON, without
recursion, refuses a record that holds anything past these bounds; the field checks (``record_check``) then
bound the labels the report draws to ``MAX_LABEL`` characters.
"""

from __future__ import annotations

import math

MAX_DEPTH = 32  # records nest about 4 deep (fingerprint.versions, utilisation_timeline items)
MAX_VALUES = 100_000  # values (numbers, strings, lists, mappings) in one record: 30x the largest published one
MAX_ITEMS = 20_000  # items of one list (epochs, history curves, timeline: a few hundred)
MAX_TEXT = 16_384  # characters of any one string (a traceback is cut to 2 kB by the notebook)
MAX_KEY = 256  # characters of a mapping's key
MAX_KEYS = 512  # keys of one mapping (a record has about 100 at the top)
MAX_INT = 2**53  # integers beyond +-2**53 are not exact as floats; past ~1e308 not floats at all


def out_of_bounds(obj, depth: int = MAX_DEPTH) -> str | None:
    """Why ``obj`` (parsed JSON) is beyond what a record may hold; None when within bounds. Reasons name the
    bound, not the value, so the report can group them."""
    stack = [(obj, 1)]
    seen = 0
    while stack:
        v, d = stack.pop()
        seen += 1
        if seen > MAX_VALUES:
            return f"more than {MAX_VALUES:,} values in it"
        if isinstance(v, float):
            if not math.isfinite(v):
                return "a non-finite number (NaN or Infinity) in it"
        elif isinstance(v, int) and not isinstance(v, bool):
            if not -MAX_INT <= v <= MAX_INT:
                return "an integer beyond ±2**53 in it (not a float)"
        elif isinstance(v, str):
            if len(v) > MAX_TEXT:
                return f"a string longer than {MAX_TEXT:,} characters in it"
        elif isinstance(v, (dict, list)):
            if d > depth:
                return f"nested deeper than {depth} levels"
            if isinstance(v, dict):
                if len(v) > MAX_KEYS:
                    return f"a mapping with more than {MAX_KEYS} keys in it"
                if any(len(k) > MAX_KEY for k in v):
                    return f"a key longer than {MAX_KEY} characters in it"
                stack.extend((x, d + 1) for x in v.values())
            else:
                if len(v) > MAX_ITEMS:
                    return f"a list of more than {MAX_ITEMS:,} items in it"
                stack.extend((x, d + 1) for x in v)
    return None
