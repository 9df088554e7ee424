"""Prices and costs: params/prices.yaml, a machine's profile, cost per 1,000 samples and per source epoch.

    prices = load_prices()                                 # the default price set ("current": today's prices)
    prices = load_prices(price_set="2017")                 # seed 002's 2017 prices: reproduces its cost table
    costed = add_costs(summ, prices, host_profiles={})     # adds profile, $/h and costs per sample
    rel, no_base = relative_table(costed, {"device": "cpu"})

A price set (the file's ``price_sets``: name -> era) selects the profiles of one era, so one report never mixes
2017 and 2026 prices; ``prices["profiles"]`` holds the selected ones, ``prices["all_profiles"]`` every one.
A machine is priced as the machine a user rents: all its logical CPUs (``machine_cpus``), whatever
affinity a point narrowed itself to. Costs are per 1,000 samples and per epoch of the source's full
dataset (derived from samples/s), so configurations that trained on different epoch sizes compare.
"""

from __future__ import annotations

import re

from helpers.report.load import columns as C
from helpers.report.load.prices import PriceError, load_prices, price_sets, profile_era, select_price_set
from helpers.report.load.values import isnull


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
    """The profile name for one machine: ``host_profiles`` first (a host mapped to None: no price, whatever
    its hardware), then the first matching rule set."""
    profiles = prices.get("profiles") or {}
    hp = host_profiles or {}
    if host is not None and str(host) in hp:
        if hp[str(host)] is None:
            return None
        if hp[str(host)] in profiles:
            return hp[str(host)]
    for name, prof in profiles.items():
        rules = (prof or {}).get("match")
        if rules and all(_rule_holds(k, v, gpu, cpu_model, cpus, gpus) for k, v in rules.items()):
            return name
    return None


def one_gpu_price(gpu: str, prices: dict | None = None) -> tuple[str, float] | None:
    """(profile, $ an hour on demand) of a machine of one ``gpu`` in the price set in use (``load_prices``), or None
    where no profile of it has a price: the predicted figures' price an epoch (``--predict``, the verdict)."""
    prices = load_prices() if prices is None else prices
    name = match_profile(None, gpu, None, None, 1, prices)
    hourly = ((prices.get("profiles") or {}).get(name) or {}).get("on_demand_per_hour") if name else None
    return (name, float(hourly)) if hourly else None


def check_profile(name: str, prices: dict, where: str) -> None:
    profiles = prices.get("profiles") or {}
    if name not in profiles:
        src = prices.get("_path", "params/prices.yaml")
        allowed = ", ".join(sorted(profiles)) or "none: the file has no profiles"
        other = (prices.get("all_profiles") or {}).get(name)
        if other is not None:
            in_sets = sorted(k for k, e in price_sets(prices).items() if e in (None, profile_era(other))) or ["none"]
            raise PriceError(f"{where}: price profile '{name}' is in {src} but in price set(s) {', '.join(in_sets)}, "
                             f"not in the set in use ('{prices.get('price_set')}'): choose that price set, or "
                             f"one of this set's profiles: {allowed}")
        raise PriceError(f"{where}: price profile '{name}' is not in {src} (key 'profiles'); allowed: " + allowed)


def record_profiles(records) -> dict:
    """host -> price profile, from records of runs made with ``run_all.sh --price-profile NAME``."""
    out = {}
    for r in records:
        name = r.get("price_profile")
        host = (r.get("fingerprint") or {}).get("host")
        if name and host:
            out[str(host)] = str(name)
    return out


def priced_machine(host, gpu, cpu_model, cpus) -> str:
    """What a record's price profile attaches to: its machine (host name and hardware: GPU, CPU model, logical
    CPUs), never a host name alone (another machine's record naming the same host must not reprice this one)."""
    def norm(v):
        if isnull(v):
            return None
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return int(v)
        return str(v)

    return "|".join(repr(norm(v)) for v in (host, gpu, cpu_model, cpus))


def machine_profiles(records) -> tuple[dict, list]:
    """(machine key -> price profile, [machine keys whose records name different profiles]) from the records'
    ``price_profile`` (``run_all.sh --price-profile NAME``): a record prices its own machine (``priced_machine``) only.
    A machine whose records disagree gets none of their profiles (its price comes from the hardware match)."""
    from helpers.report.load.columns import row as _row

    out, conflicts = {}, set()
    for r in records:
        name = r.get("price_profile")
        if not name:
            continue
        try:
            row = _row(r)
        except Exception:  # noqa: BLE001 - a record the table cannot read prices nothing
            continue
        key = priced_machine(row.get("host"), row.get("gpu"), row.get("cpu_model"), row.get("machine_cpus"))
        if key in out and out[key] != str(name):
            conflicts.add(key)
        out.setdefault(key, str(name))
    return {k: v for k, v in out.items() if k not in conflicts}, sorted(conflicts)


def add_costs(summ, prices: dict, host_profiles: dict | None = None, price_set: str | None = None,
              machine_profiles: dict | None = None):
    """Adds profile, $/h (on-demand, preemptible) and costs per 1,000 samples, per source epoch, per run.

    ``price_set`` (a name of the file's ``price_sets``) chooses the prices again (``select_price_set``);
    None keeps ``prices`` as loaded. A profile named in ``host_profiles`` that the set in use lacks is an
    error (``PriceError``); a host mapped to None gets no price. ``machine_profiles`` (``priced_machine`` -> a
    profile, or None: no price) come from records and price only their own machine, after ``host_profiles``
    (the user's) and before the hardware match."""
    if price_set is not None:
        prices = select_price_set(prices, price_set)
    for host, name in (host_profiles or {}).items():
        if name is not None:
            check_profile(name, prices, f"host_profiles[{host!r}]")
    s = summ.copy()
    profiles = prices.get("profiles") or {}
    names, od, pre, labels = [], [], [], []
    for _, r in s.iterrows():
        cpus = r.get("machine_cpus") if not isnull(r.get("machine_cpus")) else r.get("cpus")
        key = priced_machine(r.get("host"), r.get("gpu"), r.get("cpu_model"), cpus)
        if machine_profiles and key in machine_profiles and str(r.get("host")) not in (host_profiles or {}):
            name = machine_profiles[key] if machine_profiles[key] in profiles else None
        else:
            name = match_profile(r.get("host"), r.get("gpu"), r.get("cpu_model"), cpus, r.get("gpus"), prices,
                                 host_profiles)
        p = profiles.get(name) or {}
        names.append(name)
        od.append(p.get("on_demand_per_hour"))
        pre.append(p.get("preemptible_per_hour"))
        labels.append(p.get("label"))
    s["profile"] = names
    s["profile_label"] = labels
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
    m = m[m[C.SAMPLES_PER_S].notna()]
    if m.empty:
        return None
    return m.loc[m[C.SAMPLES_PER_S].idxmax()]

