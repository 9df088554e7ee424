"""The records under some folders as the report reads them (``load_rows``) and as a comparison reads one side
(``comparison_side``): every record the table can hold, each string made ``visible`` but its paths (the report);
a record the table cannot hold costs that record only."""

from __future__ import annotations

from pathlib import Path

from helpers.report.load import table
from helpers.report.load.visible import visible

_WHERE = ("_path", "notebook")  # where a record lies and its notebook: kept as they are, to be found again


def _visible(v):
    """A record's strings (values and keys) made ``visible``: charts, tables and sentences draw what the
    record says, never a raw bidi control, zero-width character or lone surrogate (matplotlib cannot draw one)."""
    if isinstance(v, str):
        return visible(v)
    if isinstance(v, dict):
        return {visible(k) if isinstance(k, str) else k: _visible(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_visible(x) for x in v]
    return v


def load_rows(folders):
    """``table.load_table``, where a record that cannot be tabulated (an error in ``table``'s row of it, which
    the record checks should have prevented) costs that record only: skipped, with the error's name. Every
    string of a record but its paths is made ``visible`` first."""
    from helpers.record.reader import read_records

    folders = [Path(f) for f in folders if Path(f).exists()]
    records, skipped = read_records(folders, table.workload_knobs)
    records = [{**_visible({k: v for k, v in r.items() if k not in _WHERE}),
                **{k: r[k] for k in _WHERE if k in r}} for r in records]
    good = []
    for r in records:
        try:
            table.row(r)
        except Exception as exc:  # noqa: BLE001 - one record's problem, never the report's
            skipped.append((r.get("_path"), f"could not be tabulated ({type(exc).__name__})"))
        else:
            good.append(r)
    return table.tidy(good), good, skipped


def comparison_side(folders):
    """(tidy table, records, files left out and why) of ``folders``, as ``table.load_table`` reads them, where a
    record that cannot be tabulated costs that record only (left out, with its error's name: as the report's
    ``records.load_rows``). The table is built once; a record is tried alone only when the whole table fails."""
    from helpers.record.reader import read_records

    records, skipped = read_records([Path(f) for f in folders if Path(f).exists()], table.workload_knobs)
    try:
        return table.tidy(records), records, skipped
    except Exception:  # noqa: BLE001 - one record's problem: find it, leave it out, keep the rest
        good = []
        for r in records:
            try:
                table.row(r)
            except Exception as exc:  # noqa: BLE001
                skipped.append((str(r.get("_path")), f"could not be tabulated ({type(exc).__name__})"))
            else:
                good.append(r)
        return table.tidy(good), good, skipped
