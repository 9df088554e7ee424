"""results.csv and configurations.csv: written beside every report, read back by pandas with numbers as numbers and
empty cells as NaN, text from records unable to run as a spreadsheet formula."""

from __future__ import annotations

import pandas as pd
import pytest
from support import first_screen as known_records

from helpers import report
from helpers.paths import PROJECT_ROOT
from helpers.record.writer import write_atomic
from helpers.report import csvs


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
