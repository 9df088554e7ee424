"""Prices and costs: params/prices.yaml, a machine's profile, cost per 1,000 samples and per source epoch.

    prices = load_prices()                                 # {'currency', 'profiles': {name: {...}}}
    costed = add_costs(summ, prices, host_profiles={})     # adds profile, $/h and costs per sample
    rel, no_base = relative_table(costed, {"device": "cpu"})

A machine is priced as the machine a user rents: all its logical CPUs (``machine_cpus``), whatever
affinity a point narrowed itself to. Costs are per 1,000 samples and per epoch of the source's full
dataset (derived from samples/s), so configurations that trained on different epoch sizes compare.
"""

from __future__ import annotations

import re
from pathlib import Path

from ..paths import PROJECT_ROOT
from .fmt import isnull, spread_text

PRICES = PROJECT_ROOT / "params" / "prices.yaml"


class PriceError(ValueError):
    """A price profile was asked for that the prices file does not have."""


def load_prices(path: Path | str | None = None) -> dict:
    """params/prices.yaml: {'currency': ..., 'profiles': {name: {...}}}; no profiles if absent."""
    import yaml

    path = Path(path) if path else PRICES
    if not path.is_file():
        return {"currency": "USD", "profiles": {}, "_error": f"{path} not found"}
    data = yaml.safe_load(path.read_text()) or {}
    if not isinstance(data, dict):
        raise PriceError(f"{path}: a prices file is a mapping with the key 'profiles'")
    data["_path"] = str(path)
    data.setdefault("profiles", {})
    data.setdefault("currency", "USD")
    return data


def _rule_holds(key, want, gpu, cpu_model, cpus, gpus) -> bool:
    if key == "gpu_name":
        return gpu is not None and not isnull(gpu) and re.search(str(want), str(gpu), re.I) is not None
    if key == "cpu_model":
        return cpu_model is not None and not isnull(cpu_model) and re.search(str(want), str(cpu_model),
                                                                             re.I) is not None
    if key == "cpus":
        return not isnull(cpus) and int(cpus) == int(want)
    if key == "gpus":
        return int(gpus or 0) == int(want)
    return False  # an unknown rule never matches (a typo must not price a machine)


def match_profile(host, gpu, cpu_model, cpus, gpus, prices: dict, host_profiles: dict | None = None):
    """The profile name for one machine: ``host_profiles`` first, then the first matching rule set."""
    profiles = prices.get("profiles") or {}
    hp = host_profiles or {}
    if host is not None and str(host) in hp and hp[str(host)] in profiles:
        return hp[str(host)]
    for name, prof in profiles.items():
        rules = (prof or {}).get("match")
        if rules and all(_rule_holds(k, v, gpu, cpu_model, cpus, gpus) for k, v in rules.items()):
            return name
    return None


def check_profile(name: str, prices: dict, where: str) -> None:
    profiles = prices.get("profiles") or {}
    if name not in profiles:
        src = prices.get("_path", "params/prices.yaml")
        raise PriceError(f"{where}: price profile '{name}' is not in {src} (key 'profiles'); allowed: "
                         + (", ".join(sorted(profiles)) or "none: the file has no profiles"))


def record_profiles(records) -> dict:
    """host -> price profile, from records of runs made with ``run_all.sh --price-profile NAME``."""
    out = {}
    for r in records:
        name = r.get("price_profile")
        host = (r.get("fingerprint") or {}).get("host")
        if name and host:
            out[str(host)] = str(name)
    return out


def add_costs(summ, prices: dict, host_profiles: dict | None = None):
    """Adds profile, $/h (on-demand, preemptible) and costs per 1,000 samples, per source epoch, per run.

    A profile named in ``host_profiles`` that the prices file lacks is an error (``PriceError``)."""
    for host, name in (host_profiles or {}).items():
        check_profile(name, prices, f"host_profiles[{host!r}]")
    s = summ.copy()
    profiles = prices.get("profiles") or {}
    names, od, pre = [], [], []
    for _, r in s.iterrows():
        cpus = r.get("machine_cpus") if not isnull(r.get("machine_cpus")) else r.get("cpus")
        name = match_profile(r.get("host"), r.get("gpu"), r.get("cpu_model"), cpus, r.get("gpus"), prices,
                             host_profiles)
        p = profiles.get(name) or {}
        names.append(name)
        od.append(p.get("on_demand_per_hour"))
        pre.append(p.get("preemptible_per_hour"))
    s["profile"] = names
    s["on_demand_per_h"] = [float(v) if v is not None else float("nan") for v in od]
    s["preemptible_per_h"] = [float(v) if v is not None else float("nan") for v in pre]
    for kind in ("on_demand", "preemptible"):
        per_s = s[f"{kind}_per_h"] / 3600.0
        s[f"{kind}_per_1k"] = per_s * s["s_per_1k"] if "s_per_1k" in s else float("nan")
        s[f"{kind}_per_source_epoch"] = per_s * s["source_epoch_s"] if "source_epoch_s" in s else float("nan")
        s[f"{kind}_per_run"] = s["total_s"] * per_s
    return s


def pick_base(g, base_config: dict):
    """The base configuration of one workload's rows ``g``: the fastest (samples/s) row matching every key."""
    m = g
    for k, v in (base_config or {}).items():
        if k not in g.columns:
            return None
        m = m[m[k].astype(str) == str(v)]
    m = m[m["samples_per_s"].notna()]
    if m.empty:
        return None
    return m.loc[m["samples_per_s"].idxmax()]


def relative_table(costed, base_config: dict):
    """Training time and cost per sample relative to the base configuration (per workload), as seed 002
    charts them: ``time × base`` = base samples/s ÷ samples/s; cost likewise per 1,000 samples."""
    import pandas as pd

    rows, missing = [], []
    for wl, g in costed.groupby("workload", sort=True):
        base = pick_base(g, base_config)
        if base is None:  # fall back to the fastest CPU configuration (every machine has a CPU), and say so
            missing.append(wl)
            base = pick_base(g, {"device": "cpu"})
            if base is None:
                base = g.loc[g["samples_per_s"].idxmin()]
        for _, r in g.sort_values("samples_per_s", ascending=False).iterrows():
            rows.append({
                "workload": wl, "machine": r["machine"], "device · backend": r["config"], "batch": r["batch_size"],
                "threads": "all" if r["threads"] == 0 else r["threads"],
                "base": "◀ base" if r.name == base.name else "",
                "samples/s [IQR]": spread_text(r["samples_per_s"], r["sps_q1"], r["sps_q3"]),
                "s per source epoch": r["source_epoch_s"],
                "time × base": base["samples_per_s"] / r["samples_per_s"],
                "profile": r["profile"] or "no price",
                "$/1k samples on-demand": r["on_demand_per_1k"], "$/1k samples preemptible": r["preemptible_per_1k"],
                "$/source epoch on-demand": r["on_demand_per_source_epoch"],
                "$/source epoch preemptible": r["preemptible_per_source_epoch"],
                "cost × base (on-demand)": r["on_demand_per_1k"] / base["on_demand_per_1k"],
                "cost × base (preemptible)": r["preemptible_per_1k"] / base["preemptible_per_1k"],
            })
    return pd.DataFrame(rows), missing


def price_sources(prices: dict, used: set):
    import pandas as pd

    rows = []
    for name, p in (prices.get("profiles") or {}).items():
        p = p or {}
        rows.append({"profile": name, "used here": "yes" if name in used else "", "description": p.get("description"),
                     "on-demand $/h": p.get("on_demand_per_hour"), "preemptible $/h": p.get("preemptible_per_hour"),
                     "source": p.get("source"), "date": p.get("date")})
    return pd.DataFrame(rows)
