"""The report context: everything loaded and aggregated once, then handed to every section.

    ctx = build_context([Path("outputs")], base_config={"device": "cpu", "backend": "tensorflow"})
    ctx.df, ctx.summary, ctx.costed, ctx.published, ctx.records, ctx.skipped, ctx.notes
    ctx.skipped_reasons, ctx.duplicates

Sections read only this object (never files), so each can be tested from literal records.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from ..record import split_duplicates
from . import aggregate, costs, published, table


@dataclass(frozen=True)
class Context:
    folders: tuple  # folders the records were read from
    df: object  # the tidy table: one row per record (table.COLUMNS)
    records: tuple  # the raw records (dicts with _path)
    skipped: tuple  # (file, why) of the JSON files that are not usable records
    summary: object  # one row per configuration (aggregate.summarise), per-sample columns added
    costed: object  # summary with profiles, prices and costs (costs.add_costs)
    prices: dict
    published: object  # data/published_figures.csv
    base_config: dict = field(default_factory=dict)
    timeline_run: str = ""
    notes: tuple = ()  # (template, values, kind): said once, at the top
    duplicates: tuple = ()  # (file, 'duplicate of <file>'): copies of runs already read, dropped
    skipped_reasons: tuple = ()  # (why, how many files): ``skipped`` grouped by reason, most frequent first

    @property
    def by_path(self) -> dict:
        return {r.get("_path"): r for r in self.records}

    @property
    def has_records(self) -> bool:
        return len(self.df) > 0

    @property
    def has_ok(self) -> bool:
        return bool((self.df["status"] == "ok").any()) if len(self.df) else False


def build_context(folders, base_config: dict | None = None, host_profiles: dict | None = None,
                  timeline_run: str = "", prices_file: str | Path | None = None,
                  published_file: str | Path | None = None) -> Context:
    """Load every record under ``folders`` and aggregate it. ``host_profiles`` (host -> price profile)
    given by the user must name known profiles (``costs.PriceError`` otherwise); a profile named only in
    someone's records that this prices file lacks means 'no price', said once in ``notes``."""
    folders = [Path(f) for f in folders]
    df, records, skipped = table.load_table(folders)
    skipped, duplicates = split_duplicates(skipped)
    reasons = tuple(Counter(why for _, why in skipped).most_common())
    summ = aggregate.summarise(df)
    prices = costs.load_prices(prices_file or None)
    notes = []
    from_records = costs.record_profiles(records)
    unknown = sorted({p for p in from_records.values() if p not in (prices.get("profiles") or {})})
    if unknown:
        notes.append(("Records name price profile(s) this prices file does not have: {}; their machines get no "
                      "price.", (", ".join(unknown),), "warn"))
        from_records = {h: p for h, p in from_records.items() if p not in unknown}
    costed = costs.add_costs(summ, prices, {**from_records, **(host_profiles or {})})
    pub = published.load_published(published_file or None)
    return Context(folders=tuple(folders), df=df, records=tuple(records), skipped=tuple(skipped), summary=summ,
                   costed=costed, prices=prices, published=pub, base_config=dict(base_config or {}),
                   timeline_run=timeline_run or "", notes=tuple(notes), duplicates=tuple(duplicates),
                   skipped_reasons=reasons)
