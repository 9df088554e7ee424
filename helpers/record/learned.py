"""Did one run learn? The check of a record's history that needs no other record
(``helpers.report.derive.learning`` adds the comparison with a workload's other configurations, ``helpers.predict``
leaves such runs out of its fit).

    learned, why = run_check(curve, accuracy, n_classes, learnable)   # 'yes' | 'no' | 'not checked', and why
    learned, why = of_record(rec)
"""

from __future__ import annotations

import math

YES, NO, NOT_CHECKED = "yes", "no", "not checked"


def finite(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def shown(v) -> str:
    """A loss as the line shows it: three significant digits, positional (0.00000129, never 1.29e-06)."""
    import math

    if not finite(v):
        return "nan"
    a = abs(v)
    if a == 0:
        return "0"
    if a >= 999.5:
        return f"{v:,.0f}"
    text = f"{v:.{max(0, 2 - math.floor(math.log10(a)))}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def run_check(curve, acc, n_classes, learnable) -> tuple[str, str]:
    """(learned, why) of one run from its loss per epoch (``curve``: a tuple, None/NaN where not finite), its last
    accuracy, its class count (None: unknown) and whether its data can be learned (False: random targets)."""
    curve = tuple(curve or ())
    if not curve:
        return NOT_CHECKED, "no loss recorded"
    bad = next((i for i, v in enumerate(curve) if not finite(v)), None)
    if bad is not None:
        return NO, f"loss not finite ({shown(curve[bad])}) from epoch {bad + 1}"
    if learnable is False:
        return NOT_CHECKED, "synthetic data with random targets (nothing to learn): checked finite only"
    if len(curve) >= 2 and not curve[-1] < curve[0]:
        return NO, f"loss did not fall ({shown(curve[0])} at epoch 1, {shown(curve[-1])} at epoch {len(curve)})"
    if finite(acc) and n_classes and n_classes >= 2 and acc <= 1.0 / n_classes:
        return NO, f"accuracy {acc:.3g} at chance (1/{int(n_classes)})"
    if len(curve) < 2:
        return YES, f"loss finite ({shown(curve[0])}, one epoch)"
    return YES, f"loss fell ({shown(curve[0])} → {shown(curve[-1])} over {len(curve)} epochs)"

def learnable(rec: dict):
    """False where a record says its data has nothing to learn (``data_learnable`` false, or, in records before it,
    synthetic data whose detail says its targets are random), else None (not said)."""
    if rec.get("data_learnable") is False:
        return False
    detail = rec.get("data_detail")
    return False if rec.get("data_source") == "synthetic" and isinstance(detail, str) and "(random)" in detail else None


def check_inputs(rec: dict) -> dict:
    """What the check reads of a record: ``loss_curve`` (a tuple of floats, NaN where an epoch's loss is not a finite
    number), ``n_classes`` (None where not said) and ``data_learnable`` (``learnable``)."""
    hist = rec.get("history") if isinstance(rec.get("history"), dict) else {}
    loss = hist.get("loss") if isinstance(hist.get("loss"), list) else []
    n = rec.get("n_classes")
    return {"loss_curve": tuple(float(v) if finite(v) else float("nan") for v in loss),
            "n_classes": n if isinstance(n, int) and not isinstance(n, bool) and n > 0 else None,
            "data_learnable": learnable(rec)}


def of_record(rec: dict) -> tuple[str, str]:
    """``run_check`` of a record as written (its history's ``loss`` and last ``accuracy``, ``n_classes``,
    ``data_learnable``); a record without a history is 'not checked'."""
    hist = rec.get("history") if isinstance(rec.get("history"), dict) else {}
    acc = hist.get("accuracy") or hist.get("acc") or [None]
    got = check_inputs(rec)
    return run_check(got["loss_curve"], acc[-1] if isinstance(acc, list) and acc else None, got["n_classes"],
                     got["data_learnable"])
