"""One string per figure, over whole pages: every number a report renders (sentences, table cells, SVG text of its
charts) and the reference READMEs that quote it. For each configuration's samples/s and each matched pair's
speedup, the renderings of its value other than the one the report shows (three or four significant digits, the
whole number) must appear nowhere: '3,637' beside '3,640', '118,526' or '118,500' beside '120,000'.

Reports: a default-like one (2-core CPU runs beside the bundled H100 reference), the H100 reference, and the
multi-GPU references reference/h100x2/multi_gpu, reference/h100x4 and reference/h200x2; READMEs: theirs and the
project's. On each page and in its verdict.csv: no figure in powers of ten ('1e+02 s', '1.1e-05%'), the CSV's
``*_shown`` columns are the page's strings and its marks the page's symbols. The comparison page of two leases of the
H100 reference: each side's figure and ratio one string."""

from __future__ import annotations

import html as html_module
import re

import pytest
from support.records import _ctx, _rec

from helpers import report
from helpers.paths import PROJECT_ROOT
from helpers.report.derive.best import best_over_best
from helpers.report.derive.pairs import all_pairs
from helpers.report.load.values import isnull
from helpers.report.publish import sections
from helpers.report.words import fmt, headline

REF = PROJECT_ROOT / "reference"
H100 = "NVIDIA H100 80GB HBM3"


def _text(ctx) -> str:
    """The page's text: every section's HTML (charts inline as SVG, their labels text) without tags."""
    return _page_text(" ".join(s._repr_html_() for s in sections.build_all(ctx)))


def _page_text(html: str) -> str:
    """The text of ``html`` (sections' or a whole page's: its stylesheets and scripts left out), without tags or
    entities."""
    html = re.sub(r"<(style|script)\b.*?</\1>", " ", html, flags=re.S)
    # predicted figures are another kind (marked, each with its interval), not renderings of measured ones
    html = re.sub(r'<ul class="cgb-predicted">.*?</ul>', " ", html, flags=re.S)
    html = re.sub(r"<details><summary>Predicted beside measured.*?</details>", " ", html, flags=re.S)
    return re.sub(r"\s+", " ", html_module.unescape(re.sub(r"<[^>]+>", " ", html)))


def _figures(ctx) -> dict:
    """name -> (value, the string the report shows, unit): every configuration's samples/s, every matched pair's
    speedup."""
    out = {}
    for i, r in enumerate(ctx.costed.to_dict("records")):
        if not isnull(r.get("samples_per_s")):
            out[f"config {i} {r['workload']} {r['backend']} {r['device']}"] = (r["samples_per_s"], fmt.sps_shown(r), "")
    pairs = all_pairs(ctx.costed)
    for r in (pairs.to_dict("records") if pairs is not None and len(pairs) else []):
        out[f"pair {r['workload']} {r['backend']}"] = (r["speedup"], fmt.speedup_shown(r)[:-1], "×")
    return out


def _others(v, shown: str) -> set:
    """The renderings of ``v`` that are not ``shown``: 3 and 4 significant digits and the whole number, each with at
    least three significant digits (fewer meet tick labels and round figures of other things)."""
    out = {fmt.rounded(v, 3), fmt.rounded(v, 4)} | ({f"{v:,.0f}"} if abs(v) >= 1000 else set())
    return {c for c in out if c != shown and c != fmt.rounded(v, 2) and c != fmt.rounded(v, 1)}


def _figures_only(text: str) -> str:
    """``text`` without the bounds of intervals and ranges ('[11,500–11,560]', '(3,564–3,709)', '0.77-0.92', the
    published table's low and high columns): a bound is a figure of its own, not a rendering of the median."""
    text = re.sub(r"\[[^\]]*\]", " ", text)
    text = re.sub(r"\d[\d,.]*\s?[–-]\s?\d[\d,.]*", " ", text)
    return re.sub(r"(low|high) samples/s \S+", " ", text)


def _renderings(v) -> set:
    return {fmt.rounded(v, d) for d in (2, 3, 4)} | {f"{v:,.0f}", f"{v:g}", f"{v:.4g}", f"{v:.2f}", fmt.num(v)}


def other_quantities(ctx) -> set:
    """Every rendering of every other number the records and the published figures hold (samples counts, CPU %,
    seconds, published values...): a candidate that is one of them is ambiguous and not counted."""
    import math

    out = set()
    frames = [(ctx.df, True), (ctx.costed, True), (ctx.published, False)]
    for frame, skip_sps in frames:
        if frame is None or not len(frame):
            continue
        for col in frame.columns:
            if skip_sps and ("samples_per_s" in col or col.startswith(("sps", "runs_sps", "fresh_", "speedup"))):
                continue
            for v in frame[col]:
                if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v:
                    out |= _renderings(float(v))
    for r in ctx.costed.to_dict("records"):  # the energy section's derived figures (per 1k samples, source epoch)
        e, n, src = r.get("energy_j_per_epoch"), r.get("n_train"), r.get("source_samples")
        if not (isnull(e) or isnull(n) or not n):
            for v in (1000 * e / n, *(() if isnull(src) else (e / n * src, e / n * src / 3600))):
                if math.isfinite(v) and v:
                    out |= _renderings(v)
    from helpers.report.derive import fresh

    for _, meds in fresh.lease_medians(ctx.df).values():  # a lease's median (the READMEs' spread tables)
        for v in meds:
            out |= _renderings(v)
    return out


def _mismatches(text: str, figures: dict, ambiguous: set = frozenset()) -> list:
    text = _figures_only(text)
    shown = {s for _, s, _ in figures.values()}
    bad = []
    for name, (v, s, unit) in figures.items():
        # a rendering that is another figure's own string is that figure's; one that is another quantity's, ambiguous
        for c in _others(v, s) - shown - (ambiguous if not unit else set()):
            if re.search(rf"(?<![\d.,]){re.escape(c)}{re.escape(unit)}(?![\d,])", text):
                bad.append((name, s, c))
    return bad


def _default_like(tmp_path):
    def point(i, backend, sps, batch=1000, workload="cnn_cifar10"):
        return _rec(i, workload=workload, backend=backend, device="cpu", device_used="cpu", batch_size=batch,
                    n_train=1000, median_epoch_s=1000 / sps, epoch_s=[1000 / sps] * 3, samples_per_s=sps,
                    step_s=batch / sps, steps_per_epoch=max(1, 1000 // batch), params={"threads": 0,
                                                                                       "precision": "float32"},
                    point_id=f"{workload}-{backend}-{batch}", fingerprint={
                        "host": "laptop", "cpu_model": "Some CPU", "cpu_logical": 2, "gpu_names": [],
                        "versions": {"keras": "3.15.1"}})
    recs = [point(0, "tensorflow", 11_622), point(1, "jax", 1_169), point(2, "torch", 2_350),
            point(3, "jax", 27_100, batch=128, workload="mlp_mnist"),
            point(4, "tensorflow", 9_000, batch=128, workload="mlp_mnist")]
    return _ctx(tmp_path, recs, use_reference=True)


REPORTS = {
    "default-like": (_default_like, []),
    "h100": (lambda _: report.build_context([REF / "h100" / "records"]), [REF / "h100" / "README.md",
                                                                           PROJECT_ROOT / "README.md"]),
    "h100x2/multi_gpu": (lambda _: report.build_context([REF / "h100x2" / "multi_gpu" / "records"]),
                         [REF / "h100x2" / "multi_gpu" / "README.md"]),
    "h200x2": (lambda _: report.build_context([REF / "h200x2" / "records"]), [REF / "h200x2" / "README.md"]),
    "h100x4": (lambda _: report.build_context([REF / "h100x4" / "records"]), [REF / "h100x4" / "README.md"]),
}
SCIENTIFIC = re.compile(r"(?<![\w.])\d+(\.\d+)?e[+-]?\d+(?!\w)", re.I)  # '1e+02', '1.1e-05': a figure in powers of ten


# the H100 reference's page as the runner renders it (``h100_page``, shared with test_report's browser test);
# the others' sections built here
RENDERED = {"h100"}


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.xdist_group("h100_page")) if n in RENDERED else n
                                  for n in REPORTS])
def test_one_string_per_figure_over_the_whole_page_and_its_readmes(name, tmp_path, request):
    build, readmes = REPORTS[name]
    report.setup_plots()
    ctx = build(tmp_path)
    figures = _figures(ctx)
    assert figures
    if name in RENDERED:
        res, out = request.getfixturevalue("h100_page")
        assert res.returncode == 0, res.stdout + res.stderr[-3000:]
        text = _page_text((out / "report.html").read_text(encoding="utf-8"))
    else:
        text = _text(ctx)
    ambiguous = other_quantities(ctx)
    assert _mismatches(text, figures, ambiguous) == []
    assert not SCIENTIFIC.search(text), text[max(0, SCIENTIFIC.search(text).start() - 80):][:160]
    _verdict_csv_reads_as_the_page(ctx, text)
    for p in readmes:
        assert _mismatches(p.read_text(encoding="utf-8"), figures, ambiguous) == [], p.name
    # the verdict's figures are there, each as the report writes it
    rows = best_over_best(ctx.costed)
    if len(rows):
        for r in rows.to_dict("records"):
            assert fmt.speedup_shown(r) in text, r["workload"]
            assert headline.sides(r).split(" → ")[0].split(" on ")[0] in text


def _verdict_csv_reads_as_the_page(ctx, text: str) -> None:
    """verdict.csv's columns meant to be read are the page's strings: every ``*_shown`` figure is on the page, none in
    powers of ten; its marks are the page's symbols; its counts are integers."""
    from helpers.report.publish import csvs

    frame = csvs.whole(csvs.verdict_frame(ctx))
    measured = frame[frame["figure"] == "measured"]
    for col in [c for c in frame.columns if c.endswith("_shown")]:
        for v in measured[col].dropna():
            assert not SCIENTIFIC.search(str(v)) and str(v) in text, (col, v)
    for v in frame["marks"].dropna():
        assert "host busy" not in v and not re.search(r"\bone run\b", v), v
    written = frame.to_csv(index=False)
    for col in ("cpu_batch_size", "gpu_batch_size", "cpu_runs", "gpu_runs", "cpu_threads"):
        assert not any(re.fullmatch(r"\d+\.0", str(v)) for v in frame[col].dropna().astype(str)), (col, written[:300])


def test_the_comparison_of_two_leases_prints_each_figure_one_way(tmp_path):
    """Two leases of the H100 reference compared: each side's figure as the report rounds it, the ratio of the
    printed figures, nothing in powers of ten, and no other rendering of a side's median on the page."""
    import json

    from helpers.report.publish import compare_page
    from helpers.report.words import compare

    leases = {"8e28086d8d20": tmp_path / "old", "8ee8feab14e7": tmp_path / "new"}
    for p in sorted((REF / "h100" / "records").glob("*.json")):
        lease = (json.loads(p.read_text(encoding="utf-8")).get("fingerprint") or {}).get("boot_id")
        if lease in leases:
            leases[lease].mkdir(exist_ok=True)
            (leases[lease] / p.name).write_bytes(p.read_bytes())
    report.setup_plots()
    cmp = compare.compare([tmp_path / "old"], [tmp_path / "new"])
    page = compare_page.page(cmp, ["old"], ["new"])
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", re.sub(r"<style.*?</style>", " ", page, flags=re.S)))
    assert not SCIENTIFIC.search(text), SCIENTIFIC.search(text)
    figures = {f"{compare.name(r)} {side}": (r[f"{side}_samples_per_s"], r[f"{side}_shown"], "")
               for r in cmp.rows for side in ("old", "new")}
    assert len(figures) >= 40
    assert _mismatches(text, figures) == []
