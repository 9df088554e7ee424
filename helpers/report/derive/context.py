"""The report context: everything loaded and aggregated once, then handed to every section.

    ctx = build_context([Path("outputs")], base_config={"device": "cpu", "backend": "tensorflow"})
    ctx.df, ctx.summary, ctx.costed, ctx.published, ctx.records, ctx.skipped, ctx.notes
    ctx.skipped_reasons, ctx.duplicates

Sections read only this object (never files), so each can be tested from literal records. The derived tables are
computed here, once a context (``best``: the verdict's best over best; ``not_learned``; ``pairs``; ``predicted``), never
again by a reader.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from helpers.record.reader import split_duplicates
from helpers.report.derive import aggregate, best, costs, fresh
from helpers.report.derive.pairs import all_pairs
from helpers.report.load import bare, published, reference
from helpers.report.load.host import this_host
from helpers.report.load.prices import load_prices
from helpers.report.load.records import load_rows

if TYPE_CHECKING:
    import pandas as pd

    from helpers.record.schema import Record


@dataclass(frozen=True)
class Context:
    folders: tuple[Path, ...]  # folders the records were read from
    df: pd.DataFrame  # the tidy table: one row per record (columns.COLUMNS)
    records: tuple[Record, ...]  # the raw records (with _path)
    skipped: tuple[tuple[str, str], ...]  # (file, why) of the JSON files that are not usable records
    summary: pd.DataFrame  # one row per configuration (aggregate.summarise), per-sample columns added
    costed: pd.DataFrame  # summary with profiles, prices and costs (costs.add_costs), fresh-machine intervals (fresh)
    prices: dict[str, Any]  # load.prices.load_prices
    published: pd.DataFrame  # data/published_figures.csv
    base_config: dict[str, Any] = field(default_factory=dict)
    timeline_run: str = ""
    notes: tuple[tuple[str, tuple, str], ...] = ()  # (template, values, kind): said once, at the top
    duplicates: tuple[tuple[str, str], ...] = ()  # (file, 'duplicate of <file>'): copies of runs already read
    skipped_reasons: tuple[tuple[str, int], ...] = ()  # (why, how many files): ``skipped`` grouped, most first
    bare: pd.DataFrame | None = None  # bare-loop results beside the records (bare.read): the limit section's yardstick
    here: tuple = ()  # the machine rendering the report (host.this_host): the verdict's "this machine"

    @cached_property
    def best(self) -> pd.DataFrame:
        """The verdict's table, fastest GPU over fastest CPU per workload (``best.best_over_best`` of ``costed``):
        computed here once a context, read by the verdict section, the findings, verdict.csv and the predictions."""
        return best.best_over_best(self.costed)

    @cached_property
    def not_learned(self) -> pd.DataFrame:
        """The workloads one side of which never learned, so no verdict row (``best.did_not_learn``)."""
        return best.did_not_learn(self.costed, self.best)

    @cached_property
    def pairs(self) -> pd.DataFrame:
        """Matched CPU/GPU pairs, your CPU beside the bundled reference's GPU too (``pairs.all_pairs`` of ``costed``:
        the summary's rows with their prices): read by the verdict's like-for-like and the speedup section."""
        return all_pairs(self.costed)

    @cached_property
    def predicted(self) -> tuple[pd.DataFrame, str]:
        """The GPU figures predicted where no GPU measured (``predicted.table``: rows, or why there are none): read
        by the verdict section and verdict.csv."""
        from helpers.report.derive import predicted

        return predicted.table(self)

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
                  published_file: str | Path | None = None, use_reference: bool = True,
                  reference_folders: list | None = None, price_set: str | None = None) -> Context:
    """Load every record under ``folders`` and aggregate it. ``host_profiles`` (host -> price profile)
    given by the user must name known profiles (``costs.PriceError`` otherwise); a profile named only in
    someone's records that this prices file lacks means 'no price', said once in ``notes``. With
    ``use_reference`` and no successful GPU point among the records, the bundled reference's GPU
    configurations that match the records' CPU ones are added (``reference.reference_rows``), marked as
    another machine's."""
    import pandas as pd

    folders = [Path(f) for f in folders]
    df, records, skipped = load_rows(folders)
    skipped, duplicates = split_duplicates(skipped)
    reasons = tuple(Counter(why for _, why in skipped).most_common())
    notes = []
    if use_reference and len(df) and not reference.has_own_gpu(df):
        ref, labels = reference.reference_rows(df, reference_folders)
        if len(ref):
            df = pd.concat([df, ref], ignore_index=True)
            notes.append(("These records have no GPU run: every GPU figure (columns, speedups, costs, energy) comes "
                          "from the bundled reference run on another machine, {}: the GPU configurations that match "
                          "your CPU ones (same workload, backend, batch size, precision, knobs), compared per sample. "
                          "Its machine name says so wherever it appears; a speedup reads \"your CPU → reference\". "
                          "./run_all.sh --no-reference leaves it out.", ("; ".join(labels),), "info"))
    conflicts = [r["_conflict"] for r in records if r.get("_conflict")]
    if conflicts:  # read_records keeps every copy of a run that says different things, each apart
        notes.append(("{} record file(s) are copies of one run that say different things. None is dropped (a forged "
                      "copy must not delete the genuine run): each is a configuration of its own, its file named as "
                      "copy=…; which is true is not for the report to guess: {}.",
                      (len(conflicts), "; ".join(conflicts[:6]) + ("; ..." if len(conflicts) > 6 else "")), "warn"))
    summ = aggregate.summarise(df)
    prices = load_prices(prices_file or None, price_set=price_set or None)
    # a record's price profile prices its own machine (host and hardware), never another of the same host name
    from_records, disagree = costs.machine_profiles(records)
    unknown = sorted({p for p in from_records.values() if p not in (prices.get("profiles") or {})})
    if unknown:
        notes.append(("Records name price profile(s) this prices file does not have: {}; their machines get no "
                      "price.", (", ".join(unknown),), "warn"))
        from_records = {h: (None if p in unknown else p) for h, p in from_records.items()}
    if disagree:
        notes.append(("Records of {} machine(s) name different price profiles for the same machine; none of them "
                      "is used: those machines are priced by their hardware.", (len(disagree),), "warn"))
    costed = costs.add_costs(summ, prices, dict(host_profiles or {}), machine_profiles=from_records)
    costed = fresh.add(costed, df)  # what a fresh machine of each kind is expected to give
    pub = published.load_published(published_file or None)
    bare_files = []  # bare_loops.jsonl files not read (not a regular file, outside the folders, too large)
    try:
        bare_df, bare_bad = bare.read(folders, bare_files)
    except Exception as exc:  # noqa: BLE001 - files from anyone: never the report's end
        bare_df, bare_bad = None, [(bare.FILE, f"could not be read ({type(exc).__name__})")]
    if bare_files:
        skipped = [*skipped, *bare_files]
        reasons = tuple(Counter(why for _, why in skipped).most_common())
    if bare_bad:
        notes.append(("{} line(s) of {} are not bare-loop results and were left out: {}.",
                      (len(bare_bad), bare.FILE, "; ".join(f"{w} ({why})" for w, why in bare_bad[:3])), "warn"))
    return Context(folders=tuple(folders), df=df, records=tuple(records), skipped=tuple(skipped), summary=summ,
                   costed=costed, prices=prices, published=pub, base_config=dict(base_config or {}),
                   timeline_run=timeline_run or "", notes=tuple(notes), duplicates=tuple(duplicates),
                   skipped_reasons=reasons, bare=bare_df, here=this_host())
