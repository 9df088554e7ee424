"""results.csv and configurations.csv: written beside every report, read back by pandas with numbers as numbers and
empty cells as NaN, text from records unable to run as a spreadsheet formula."""

from __future__ import annotations

import pandas as pd
import pytest
from support import first_screen as known_records

from helpers import report
from helpers.paths import PROJECT_ROOT
from helpers.record.writer import write_atomic
from helpers.report.publish import csvs


@pytest.fixture()
def ctx(tmp_path):
    rec = known_records._rec
    recs = [rec(0, "cnn_cifar10", "cpu", 100, 100), rec(1, "cnn_cifar10", "gpu", 560, 100),
            rec(2, "mlp_mnist", "cpu", 10, 128)]
    recs[2]["utilisation"] = {}  # no CPU samples: an empty cell
    recs[2]["fingerprint"]["cpu_model"] = "=HYPERLINK(\"http://example.invalid\")"
    for i, r in enumerate(recs):
        write_atomic(tmp_path / "in" / f"r{i}.json", r)
    return report.build_context([tmp_path / "in"], use_reference=False)


def test_both_csvs_read_back_with_the_right_dtypes(ctx, tmp_path):
    res_path, conf_path, _ = csvs.write_csvs(ctx, tmp_path / "out")
    res, conf = pd.read_csv(res_path), pd.read_csv(conf_path)
    assert len(res) == 3 and len(conf) == 3
    for col in ("samples_per_s", "first_epoch_s", "median_epoch_s", "batch_size", "cpu_busy_pct"):
        assert pd.api.types.is_numeric_dtype(res[col]), (col, res[col].dtype)
    assert res["cpu_busy_pct"].isna().sum() == 1 and res["gpu_busy_pct"].isna().all()
    assert sorted(res["samples_per_s"]) == [10.0, 100.0, 560.0]
    assert "epoch_list" not in res and "notebook" not in res and "record" in res
    for col in ("samples_per_s_median", "runs", "steady_window_s", "source_epoch_s", "batch_size"):
        assert pd.api.types.is_numeric_dtype(conf[col]), (col, conf[col].dtype)
    assert set(conf["marks"].fillna("")) <= {"†", "†‡", "‡", ""}
    assert conf["samples_per_s_low"].isna().all()  # one run each: no between-run interval, an empty cell
    row = conf[(conf["workload"] == "mlp_mnist")].iloc[0]
    assert row["source_epoch_s"] == pytest.approx(60_000 / 10)
    assert not any(str(v).startswith("=") for v in res["cpu_model"])  # a formula from a record is inert
    assert any(str(v).startswith("'=HYPERLINK") for v in res["cpu_model"])


def test_no_records_still_write_headers(tmp_path):
    ctx = report.build_context([tmp_path / "none"], use_reference=False)
    res_path, conf_path, _ = csvs.write_csvs(ctx, tmp_path / "out")
    assert len(pd.read_csv(conf_path)) == 0 and "samples_per_s_median" in pd.read_csv(conf_path).columns
    assert res_path.is_file()


@pytest.mark.parametrize("name", ["h100", "h200x2"])
def test_published_references_carry_their_csvs(name):
    folder = PROJECT_ROOT / "reference" / name
    res = pd.read_csv(folder / "results.csv")
    conf = pd.read_csv(folder / "configurations.csv")
    records = list((folder / "records").glob("*.json"))
    assert len(res) == len(records)
    assert pd.api.types.is_numeric_dtype(res["samples_per_s"]) and pd.api.types.is_numeric_dtype(
        conf["samples_per_s_median"])
    # every ok run is in one configuration's figure, or counted as an earlier-protocol run left out of it
    assert conf["runs"].sum() + conf["earlier_protocol_runs_left_out"].sum() == (res["status"] == "ok").sum()


def test_a_carriage_return_inside_a_value_starts_no_row_and_no_formula(tmp_path):
    """Values that carry a carriage return or a line feed before a formula (a workload, a host, a knob): written out
    as '\\r', never a line break a CSV reader (Python's csv, a spreadsheet's import) would end the row at; read back
    with Python's csv, every file has one row a record or configuration and no cell a spreadsheet takes for a
    formula."""
    import csv

    from support.records import _rec

    recs = [_rec(0, workload="mlp_mnist\r=2+5", point_id="a"),
            _rec(1, fingerprint={"host": "vm\r+cmd|' /C calc'!A0", "cpu_model": "X\n@SUM(1)", "cpu_logical": 4,
                                 "gpu_names": []}, point_id="b"),
            _rec(2, params={"threads": 0, "precision": "float32", "variant": "x\r=HYPERLINK(CHAR(104)&1)"},
                 point_id="c")]
    for i, r in enumerate(recs):
        write_atomic(tmp_path / "in" / f"r{i}.json", r)
    ctx = report.build_context([tmp_path / "in"], use_reference=False)
    files = csvs.write_csvs(ctx, tmp_path / "out")
    for path in files:
        raw = path.read_text(encoding="utf-8")
        assert "\r" not in raw.replace("\r\n", "\n").replace("\n", ""), path.name
        rows = list(csv.reader(raw.splitlines()))
        formulas = [c for row in rows[1:] for c in row if c[:1] in ("=", "+", "-", "@", "\t", "\r")
                    and not _number(c)]
        assert formulas == [], (path.name, formulas)
        expected = {"results.csv": len(recs), "configurations.csv": len(ctx.costed)}.get(path.name)
        if expected is not None:
            assert len(rows) == 1 + expected, (path.name, len(rows))
    results = (tmp_path / "out" / "results.csv").read_text()
    assert "mlp_mnist\\r=2+5" in results and "vm\\r+cmd" in results


def _number(cell: str) -> bool:
    try:
        float(cell)
        return True
    except ValueError:
        return False
