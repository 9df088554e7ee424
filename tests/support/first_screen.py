"""What a reader of the report sees at 1400×900 (``page_facts``, ``assert_first_screen``: the headline chart and the
verdict within the first 900 px, no table row taller than three lines, no Python module or context name in the
text, at most 25 screens) and records whose numbers are known (``known_record``), shared by the report's tests."""

from __future__ import annotations

from helpers.record.writer import write_atomic  # noqa: F401

WIDTH, HEIGHT = 1400, 900
MAX_SCREENS = 25  # any report
DEFAULT_SCREENS = 12  # a default-like report: CPU runs beside the bundled reference
REFERENCE_SCREENS = 17  # the H100 reference's report
GPU = "NVIDIA H100 80GB HBM3"
CPU = "AMD EPYC 7B13 64-Core Processor"

# what a reader must not meet: Python modules, the context object, the registry (they belong in docs/)
API_WORDS = r"/(helpers[./][A-Za-z_]|\bctx\b|\bctx\.|\bORDER\b|display\(|build_context|_repr_html_)/"

def page_facts(br) -> dict:
    """What a reader of the page open in ``br`` (a test_report.Browser at WIDTH×HEIGHT) sees: page height, table
    rows taller than three lines, API names in the text, where the verdict's chart and sentences lie."""
    js = r"""
(() => {
  const API = API_WORDS;
  const out = {height: document.documentElement.scrollHeight, rows: []};
  for (const tr of document.querySelectorAll('table tr')) {
    if (tr.closest('details:not([open])')) continue;
    const cell = tr.querySelector('td, th');
    if (!cell) continue;
    const cs = getComputedStyle(cell);
    const line = parseFloat(cs.lineHeight) || parseFloat(cs.fontSize) * 1.25;
    const pad = parseFloat(cs.paddingTop) + parseFloat(cs.paddingBottom) + 2;
    const lines = (tr.getBoundingClientRect().height - pad) / line;
    if (lines > 3.2) out.rows.push([Math.round(lines * 10) / 10, (tr.closest('section') || {}).id,
                                    tr.innerText.slice(0, 120)]);
  }
  out.api = document.body.innerText.match(new RegExp(API.source, 'g')) || [];
  const box = sel => { const e = document.querySelector(sel); if (!e) return null;
                       const r = e.getBoundingClientRect(); return [r.top + scrollY, r.bottom + scrollY]; };
  out.chart = box('#verdict .cgb-fig');
  out.verdict = box('#verdict ul.cgb-verdict');
  out.compared = box('#verdict p.cgb-finding');
  out.sentences = Array.from(document.querySelectorAll('#verdict ul.cgb-verdict li')).map(li => li.innerText);
  out.min_font = Array.from(document.querySelectorAll('section p, section li, section td, section th'))
    .map(e => parseFloat(getComputedStyle(e).fontSize)).reduce((m, v) => Math.min(m, v), 99);
  return out;
})()
""".replace("API_WORDS", API_WORDS)
    return br.eval(js)


def assert_first_screen(facts: dict, max_screens: float = MAX_SCREENS) -> None:
    """The Done-when of the first screen, on ``page_facts``."""
    assert facts["chart"] and facts["verdict"] and facts["compared"], facts
    assert facts["chart"][1] <= HEIGHT, f"the headline chart ends at {facts['chart'][1]} px"
    assert facts["verdict"][1] <= HEIGHT and facts["compared"][1] <= HEIGHT, facts
    assert 3 <= len(facts["sentences"]) <= 6, facts["sentences"]
    assert facts["rows"] == [], facts["rows"][:5]
    assert facts["api"] == [], facts["api"][:10]
    assert facts["height"] <= max_screens * HEIGHT, f"{facts['height'] / HEIGHT:.1f} screens"
    assert facts["min_font"] >= 10, facts["min_font"]


# ------------------------------------------------------------------ the sentences, from known numbers


def _rec(i, workload, device, sps, batch, n_runs_tag=""):
    n_train = 1000
    return {"schema": 3, "point_id": f"{workload}-{device}{n_runs_tag}-{i}", "workload": workload, "backend": "jax",
            "device": device, "device_used": device, "status": "ok", "reason": None,
            "params": {"threads": 0, "precision": "float32", "min_steady_s": 0.5}, "data_source": "synthetic",
            "n_train": n_train, "batch_size": batch, "epochs": 4, "first_epoch_s": 3.0,
            "epoch_s": [n_train / sps] * 3, "median_epoch_s": n_train / sps, "steady_s": 3 * n_train / sps,
            "step_s": batch / sps, "samples_per_s": float(sps), "steps_per_epoch": n_train // batch,
            "history": {"loss": [2, 1.5, 1.2, 1.0], "accuracy": [0.1, 0.3, 0.5, 0.6]},
            "utilisation": {"cpu_pct_mean": 90.0}, "energy_j_per_epoch": None,
            "fingerprint": {"host": "gpu-box", "cpu_model": CPU, "cpu_logical": 2, "gpu_names": [GPU],
                            "boot_id": "b1", "versions": {"keras": "3.15.1", "jax": "0.10.2"}},
            "started_at": f"2026-01-01T00:00:{i:02d}", "duration_s": 5.0, "notebook": None}
