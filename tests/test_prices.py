"""params/prices.yaml and its price sets: every profile sourced and dated, today's prices by default, the seed's
2017 prices on request, and which machine gets which price (helpers/report/derive/costs.py)."""

from __future__ import annotations

import copy
import datetime as dt
import json
import math

import pytest
import yaml

from helpers.paths import PROJECT_ROOT
from helpers.record.writer import write_atomic
from helpers.report.derive import aggregate, costs
from helpers.report.load import table
from helpers.report.load.prices import load_prices
from helpers.report.words import cost_table

REFERENCE = PROJECT_ROOT / "reference" / "h100" / "records"
PRICE_KEYS = ("on_demand_per_hour", "preemptible_per_hour")


def _iso(value) -> dt.date:
    assert isinstance(value, str), f"{value!r}: an ISO date written as a quoted string"
    return dt.date.fromisoformat(value)


@pytest.fixture(scope="module")
def raw():
    return yaml.safe_load((PROJECT_ROOT / "params" / "prices.yaml").read_text())


@pytest.fixture(scope="module")
def reference_pair():
    """A CPU and a GPU record of the bundled H100 reference (its real fingerprint: one H100 80GB HBM3, 16 CPUs)."""
    recs = [json.loads(p.read_text()) for p in sorted(REFERENCE.glob("*.json"))]
    cpu = next(r for r in recs if r["status"] == "ok" and r["device"] == "cpu")
    gpu = next(r for r in recs if r["status"] == "ok" and r["device"] == "gpu")
    return cpu, gpu


def _costed(tmp_path, recs, **kw):
    """The report's pipeline up to costs: records on disk -> tidy table -> one row per configuration -> costs."""
    for i, r in enumerate(recs):
        write_atomic(tmp_path / f"r{i}.json", r)
    df, _, skipped = table.load_table([tmp_path])
    assert not skipped and len(df) == len(recs), skipped
    return costs.add_costs(aggregate.summarise(df), load_prices(), **kw)


def _machine(rec, host, gpu_names, cpus, cpu_model="Some CPU"):
    r = copy.deepcopy(rec)
    r["fingerprint"].update(host=host, gpu_names=gpu_names, cpu_logical=cpus, cpu_allowed=cpus, cpu_model=cpu_model,
                            machine_key=f"{host}|{cpus}")
    r["point_id"] = f"{r['point_id']}-{host}"
    return r


def test_every_profile_cites_a_source_a_read_date_and_a_price_or_a_noted_null(raw):
    sets = raw["price_sets"]
    assert raw["default_price_set"] in sets and {"current", "2017"} <= set(sets)
    assert {str(p.get("era")) for p in raw["profiles"].values()} == set(map(str, sets.values()))
    for name, p in raw["profiles"].items():
        assert isinstance(p.get("source"), str) and len(p["source"]) > 20, name
        assert p.get("description") and p.get("date"), name
        assert _iso(p["read"]) <= dt.date.today(), name  # read on a day that has been
        assert p.get("as_of") is None or _iso(p["as_of"]) <= _iso(p["read"]), name
        assert any(p.get(k) is not None for k in PRICE_KEYS), f"{name}: no price at all"
        for k in PRICE_KEYS:
            assert k in p, f"{name}: {k} missing (write null, with a note, when the source has none)"
            if p[k] is None:
                word = {"on_demand_per_hour": "on-demand", "preemptible_per_hour": "preemptible"}[k]
                assert word in (p.get("note") or ""), f"{name}: {k} is null without a note saying why"
            else:
                assert isinstance(p[k], (int, float)) and 0 < p[k] < 100, (name, k, p[k])


def test_current_profiles_are_read_this_year_and_2017_ones_are_the_seeds(raw):
    prices = load_prices()
    assert prices["price_set"] == "current" and prices["era"] == "2026"
    current = prices["profiles"]
    assert len(current) >= 10 and all(p["era"] == "2026" for p in current.values())
    for name, p in current.items():
        assert _iso(p["read"]).year == 2026, name
        assert p["as_of"] is None or _iso(p["as_of"]).year == 2026, name  # an undated source says so in `date`
        assert p["as_of"] is not None or "no date" in p["date"], name
        assert "http" in p["source"], f"{name}: today's prices cite the page they come from"
    seed = load_prices(price_set="2017")["profiles"]
    assert seed and all(p["era"] == "2017" for p in seed.values())
    assert all(p["as_of"] is None or p["as_of"].startswith("2017") for p in seed.values())
    assert all("seed 00" in p["source"] for p in seed.values())
    assert not set(current) & set(seed)  # one report never mixes the two eras
    # what users compare, today: an H100, an A100, a T4, CPU machines of 2 to 32 vCPUs
    gpus = {p["match"]["gpu_name"] for p in current.values() if "gpu_name" in p.get("match", {})}
    assert any("H100" in g for g in gpus) and any("A100" in g for g in gpus) and any("T4" in g for g in gpus)
    assert {p["match"]["cpus"] for p in current.values() if p.get("match", {}).get("gpus") == 0} >= {2, 4, 8, 16, 32}


def test_the_h100_reference_gets_todays_single_h100_price_and_none_from_2017(tmp_path, reference_pair):
    cpu, gpu = reference_pair
    assert gpu["fingerprint"]["gpu_names"] == ["NVIDIA H100 80GB HBM3"] and gpu["fingerprint"]["cpu_logical"] == 16
    c = _costed(tmp_path, [cpu, gpu])
    lam = load_prices()["profiles"]["lambda-1x-h100-sxm"]
    assert list(c["profile"]) == ["lambda-1x-h100-sxm"] * 2  # the CPU point pays for the whole H100 machine too
    assert (c["on_demand_per_h"] == lam["on_demand_per_hour"]).all() and c["preemptible_per_h"].isna().all()
    g = c.set_index("device").loc["gpu"]
    assert g["on_demand_per_source_epoch"] == pytest.approx(g["source_epoch_s"] * lam["on_demand_per_hour"] / 3600)
    # the seed's 2017 prices have no H100: no price, rather than a K80's
    old = costs.add_costs(c, load_prices(), price_set="2017")
    assert old["profile"].isna().all() and old["on_demand_per_1k"].isna().all()


def test_k80_and_p100_get_the_seeds_prices_only_from_the_2017_set(tmp_path, reference_pair):
    cpu, _ = reference_pair
    recs = [_machine(cpu, "k80box", ["Tesla K80"], 4), _machine(cpu, "p100box", ["Tesla P100-PCIE-16GB"], 8)]
    c = _costed(tmp_path, recs, price_set="2017").set_index("host")
    seed = load_prices(price_set="2017")["profiles"]
    assert c.loc["k80box", "profile"] == "gcp-n1-standard-1-k80"
    assert c.loc["p100box", "profile"] == "gcp-n1-standard-1-p100"
    assert c.loc["p100box", "on_demand_per_h"] == seed["gcp-n1-standard-1-p100"]["on_demand_per_hour"]
    assert c.loc["k80box", "preemptible_per_h"] == seed["gcp-n1-standard-1-k80"]["preemptible_per_hour"]
    today = costs.add_costs(c.reset_index(), load_prices())  # retired GPUs: no price today
    assert today["profile"].isna().all()


def test_cpu_only_machines_get_the_cloud_machine_with_as_many_vcpus(tmp_path, reference_pair):
    cpu, _ = reference_pair
    recs = [_machine(cpu, "laptop2", [], 2, "Intel(R) Core(TM) i5"), _machine(cpu, "laptop8", [], 8, "Apple M2"),
            _machine(cpu, "odd6", [], 6), _machine(cpu, "mystery-gpu", ["Acme Tensor Thing 9000"], 16)]
    c = _costed(tmp_path, recs).set_index("host")
    current = load_prices()["profiles"]
    assert c.loc["laptop2", "profile"] == "aws-c7i-large" and c.loc["laptop8", "profile"] == "aws-c7i-2xlarge"
    for host, name in (("laptop2", "aws-c7i-large"), ("laptop8", "aws-c7i-2xlarge")):
        assert c.loc[host, "on_demand_per_h"] == current[name]["on_demand_per_hour"]
        assert c.loc[host, "preemptible_per_h"] == current[name]["preemptible_per_hour"]
        assert "cost rented" in c.loc[host, "profile_label"]
    rel, _ = cost_table.relative_table(c.reset_index(), {"device": "cpu"})
    shown = dict(zip(rel["machine"].str.split(" ").str[0], rel["profile"]))
    assert any("aws-c7i-2xlarge (what this CPU would cost rented: 8 vCPUs" in v for v in shown.values()), shown
    # a machine no profile describes gets no price, and says so
    for host in ("odd6", "mystery-gpu"):
        assert c.loc[host, "profile"] is None or math.isnan(c.loc[host, "profile"])
        assert math.isnan(c.loc[host, "on_demand_per_1k"]) and math.isnan(c.loc[host, "preemptible_per_run"])
    assert (rel["profile"] == "no price").sum() == 2


def test_matching_rules_by_fingerprint():
    now, old = load_prices(), load_prices(price_set="2017")

    def m(gpu, cpus, gpus, prices=now, cpu_model="Intel(R) Xeon(R) Processor"):
        return costs.match_profile("h", gpu, cpu_model, cpus, gpus, prices)

    assert m("NVIDIA H100 80GB HBM3", 16, 1) == "lambda-1x-h100-sxm"
    assert m("NVIDIA H100 80GB HBM3", 208, 8) is None  # eight H100s are not one H100's price
    assert m("NVIDIA H100 NVL", 40, 1) == "azure-nc40ads-h100-v5"
    assert m("NVIDIA H100 PCIe", 26, 1) == "lambda-1x-h100-pcie"
    assert m("NVIDIA A100-SXM4-40GB", 12, 1) == "lambda-1x-a100-sxm-40gb"
    assert m("NVIDIA A100 80GB PCIe", 24, 1) == "azure-nc24ads-a100-v4"
    assert m("NVIDIA A100-SXM4-80GB", 16, 1) == "runpod-a100-sxm-80gb-secure"
    assert m("Tesla T4", 4, 1) == "aws-g4dn-xlarge"
    assert m(None, 16, 0) == "aws-c7i-4xlarge" and m(None, 32, 0) == "aws-c7i-8xlarge"
    assert m(None, 64, 0) is None and m(None, 16, 0, old) == "gcp-n1-highcpu-16-skylake"
    assert m(None, 16, 0, old, cpu_model="Apple M2") is None  # 2017's rules stay as the seed wrote them
    # host_profiles win over matching, within the set in use; a host mapped to None has no price
    assert costs.match_profile("h", None, "x", 2, 0, now, {"h": "gcp-a3-highgpu-1g"}) == "gcp-a3-highgpu-1g"
    assert costs.match_profile("h", None, "x", 2, 0, now, {"h": None}) is None
    assert costs.match_profile("g", None, "x", 2, 0, now, {"h": None}) == "aws-c7i-large"


def test_a_bad_price_set_or_a_profile_of_another_set_is_refused_clearly(tmp_path):
    with pytest.raises(costs.PriceError, match=r"price set '2018' is not in .*prices.yaml.*allowed: 2017, 2026, curr"):
        load_prices(price_set="2018")
    with pytest.raises(costs.PriceError, match="price set 'latest'"):
        costs.add_costs(aggregate.summarise(table.tidy([])), load_prices(), price_set="latest")
    now = load_prices()
    with pytest.raises(costs.PriceError, match=r"'gcp-n1-standard-1-k80' is in .* price set\(s\) 2017.*'current'"):
        costs.check_profile("gcp-n1-standard-1-k80", now, "--price-profile")
    costs.check_profile("gcp-n1-standard-1-k80", load_prices(price_set=2017), "--price-profile")
    with pytest.raises(costs.PriceError, match="'nope' is not in .*allowed: aws-c7i-2xlarge"):
        costs.check_profile("nope", now, "host_profiles['h']")


def test_a_prices_file_without_sets_is_one_current_set(tmp_path):
    own = tmp_path / "prices.yaml"
    own.write_text("currency: EUR\nprofiles:\n  my-box: {match: {cpus: 12, gpus: 0}, on_demand_per_hour: 0.05}\n")
    p = load_prices(own)
    assert p["price_set"] == "current" and list(p["profiles"]) == ["my-box"] and p["currency"] == "EUR"
    with pytest.raises(costs.PriceError, match="allowed: current"):
        load_prices(own, price_set="2017")
    # eras without a `price_sets` key: one set per era, "current" the newest; a profile without era is in all
    own.write_text("profiles:\n  a: {era: 2017, on_demand_per_hour: 1.0}\n  b: {era: 2026, on_demand_per_hour: 2.0}\n"
                   "  mine: {on_demand_per_hour: 0.1}\n")
    assert sorted(load_prices(own)["profiles"]) == ["b", "mine"]
    assert sorted(load_prices(own, "2017")["profiles"]) == ["a", "mine"]
    assert load_prices(tmp_path / "absent.yaml")["profiles"] == {}


def test_price_sources_list_the_set_in_use_with_dates():
    src = cost_table.price_sources(load_prices(), {"lambda-1x-h100-sxm"})
    assert {"era", "read", "as of", "source", "date", "note"} <= set(src.columns)
    assert set(src["era"]) == {"2026"} and src["read"].str.startswith("2026-11-2").all()  # read 2026-11-23/24
    assert src.set_index("profile").loc["lambda-1x-h100-sxm", "used here"] == "yes"
    old = cost_table.price_sources(load_prices(price_set="2017"), set())
    assert set(old["era"]) == {"2017"} and "gcp-n1-standard-1-p100" in set(old["profile"])
