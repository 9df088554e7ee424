"""Prices: params/prices.yaml read (``load_prices``), with the profiles of one price set."""

from __future__ import annotations

from pathlib import Path

from helpers.paths import PROJECT_ROOT

PRICES = PROJECT_ROOT / "params" / "prices.yaml"


class PriceError(ValueError):
    """A price profile was asked for that the prices file does not have."""


DEFAULT_PRICE_SET = "current"  # the set a prices file without ``default_price_set`` uses


def load_prices(path: Path | str | None = None, price_set: str | None = None) -> dict:
    """params/prices.yaml, with the profiles of one price set: {'currency', 'profiles' (that set's),
    'all_profiles', 'price_set', 'era', 'price_sets', '_path'}; no profiles if the file is absent.

    ``price_set`` None: the file's ``default_price_set`` ("current"). A name the file does not define is an
    error (``PriceError``) that names the known ones."""
    import yaml

    path = Path(path) if path else PRICES
    if not path.is_file():
        data = {"currency": "USD", "profiles": {}, "_error": f"{path} not found"}
    else:
        data = yaml.safe_load(path.read_text()) or {}
        if not isinstance(data, dict):
            raise PriceError(f"{path}: a prices file is a mapping with the key 'profiles'")
        data["profiles"] = data.get("profiles") or {}
        data.setdefault("currency", "USD")
    data["_path"] = str(path)
    return select_price_set(data, price_set)


def profile_era(profile) -> str | None:
    """A price profile's era (the price set it belongs to), or None."""
    era = (profile or {}).get("era") if isinstance(profile, dict) else None
    return None if era is None else str(era)


def price_sets(prices: dict) -> dict:
    """Price set name -> era, as the file's ``price_sets`` says; without it, one set per era found in the
    profiles plus "current" (the newest era); a file without eras is one set, "current", of every profile."""
    sets = prices.get("price_sets")
    if isinstance(sets, dict) and sets:
        return {str(k): (None if v is None else str(v)) for k, v in sets.items()}
    every = prices.get("all_profiles", prices.get("profiles")) or {}
    eras = sorted({e for e in map(profile_era, every.values()) if e})
    return {**{e: e for e in eras}, DEFAULT_PRICE_SET: eras[-1] if eras else None}


def select_price_set(prices: dict, price_set: str | None = None) -> dict:
    """``prices`` with ``profiles`` narrowed to one price set's (its era's, plus profiles without ``era``).
    Works on a loaded prices dict (``all_profiles`` kept, so a set can be chosen again) or a literal one."""
    sets = price_sets(prices)
    name = str(price_set) if price_set is not None else str(prices.get("default_price_set") or DEFAULT_PRICE_SET)
    if name not in sets:
        src = prices.get("_path", "params/prices.yaml")
        raise PriceError(f"price set '{name}' is not in {src} (key 'price_sets'); allowed: "
                         + ", ".join(sorted(sets)))
    era = sets[name]
    every = prices.get("all_profiles", prices.get("profiles")) or {}
    chosen = {k: p for k, p in every.items() if era is None or profile_era(p) in (None, era)}
    return {**prices, "profiles": chosen, "all_profiles": every, "price_set": name, "era": era}
