"""A shard's run folder: its ``.shard.json`` (grid hash, shard, state), and what the shards of the folder say
together: which grids are split and under way, which shards finished.

    write_shard_info(run_dir, info); mark_finished(run_dir)
    conflicts(runs, gh, count)            # why a shard of this grid must not write here (another grid's shards)
    finished_shards(runs, gh, count)      # the last shard out renders the merged report
"""

from __future__ import annotations

from pathlib import Path

from helpers.record import writer
from helpers.record.reader import read_json_file
from helpers.runner.locks import now

SHARD_INFO = ".shard.json"  # a shard's run folder: grid hash, shard, state (hidden: no record reader reads it)


def write_shard_info(run_dir: Path, info: dict) -> None:
    writer.write_atomic(Path(run_dir) / SHARD_INFO, info)


def mark_finished(run_dir: Path) -> None:
    path = Path(run_dir) / SHARD_INFO
    info, why = read_json_file(path)
    if why is None and isinstance(info, dict):
        info.update(finished=True, finished_at=now())
        writer.write_atomic(path, info)


def shard_infos(runs: Path) -> list[dict]:
    """Every shard's run folder record under ``runs`` (with ``_dir``)."""
    out = []
    for path in sorted(Path(runs).glob(f"*/{SHARD_INFO}")):
        info, why = read_json_file(path)
        if why is None and isinstance(info, dict):
            out.append({**info, "_dir": str(path.parent)})
    return out


def open_campaigns(infos: list[dict]) -> dict[tuple, list[dict]]:
    """The grids split in N (grid hash, N) of which a shard started and not every shard finished: their run
    folders' records, by (grid hash, N)."""
    by: dict[tuple, list[dict]] = {}
    for i in infos:
        by.setdefault((i.get("grid_hash"), i.get("count")), []).append(i)
    out = {}
    for (gh, n), group in by.items():
        done = {i.get("index") for i in group if i.get("finished")}
        if not isinstance(n, int) or done != set(range(n)):
            out[(gh, n)] = group
    return out


def conflicts(runs: Path, gh: str, count: int) -> list[str]:
    """Why a shard of grid ``gh`` split in ``count`` must not write here: another grid's shards (or this grid's
    split in another number) are under way, started and not all finished (their runs and this grid's would mix)."""
    lines = []
    for (other, n), group in open_campaigns(shard_infos(runs)).items():
        if (other, n) == (gh, count):
            continue
        what = "another grid" if other != gh else "this grid"
        done = sorted({i.get("index") for i in group if i.get("finished")})
        lines.append(f"  {what} (hash {other}, {', '.join(group[0].get('grids') or [])}) split in {n}: shards "
                     f"started {', '.join(sorted({str(i.get('shard')) for i in group}))}, finished "
                     f"{', '.join(f'{d}/{n}' for d in done) or 'none'}; run folders: "
                     f"{', '.join(Path(i['_dir']).name for i in group)}")
    return lines


def finished_shards(runs: Path, gh: str, count: int) -> set[int]:
    out = set()
    for i in shard_infos(runs):
        if i.get("grid_hash") == gh and i.get("count") == count and i.get("finished"):
            out.add(int(i.get("index", -1)))
    return out
