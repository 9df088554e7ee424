"""The report's first screen: the verdict's generated sentences against records whose numbers are known, the short
names, the at-a-glance table's width, and (``page_checks``, used by the browser tests in test_report.py) what a
reader sees at 1400×900: the headline chart and the verdict within the first 900 px, no table row taller than three
lines, no Python module or context name in the text, at most 25 screens."""

from __future__ import annotations

import copy

import pytest

from helpers import report
from helpers.record import write_atomic
from helpers.report import findings, headline, sections
from helpers.report.reference import all_pairs

WIDTH, HEIGHT = 1400, 900
MAX_SCREENS = 25
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
  out.chart = box('#verdict img.cgb-fig');
  out.verdict = box('#verdict ul.cgb-verdict');
  out.compared = box('#verdict p.cgb-finding');
  out.sentences = Array.from(document.querySelectorAll('#verdict ul.cgb-verdict li')).map(li => li.innerText);
  out.min_font = Array.from(document.querySelectorAll('section p, section li, section td, section th'))
    .map(e => parseFloat(getComputedStyle(e).fontSize)).reduce((m, v) => Math.min(m, v), 99);
  return out;
})()
""".replace("API_WORDS", API_WORDS)
    return br.eval(js)


def assert_first_screen(facts: dict) -> None:
    """The Done-when of the first screen, on ``page_facts``."""
    assert facts["chart"] and facts["verdict"] and facts["compared"], facts
    assert facts["chart"][1] <= HEIGHT, f"the headline chart ends at {facts['chart'][1]} px"
    assert facts["verdict"][1] <= HEIGHT and facts["compared"][1] <= HEIGHT, facts
    assert 3 <= len(facts["sentences"]) <= 6, facts["sentences"]
    assert facts["rows"] == [], facts["rows"][:5]
    assert facts["api"] == [], facts["api"][:10]
    assert facts["height"] <= MAX_SCREENS * HEIGHT, f"{facts['height'] / HEIGHT:.1f} screens"
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


@pytest.fixture()
def known(tmp_path):
    """cnn_cifar10: CPU 100, GPU 560 samples/s (5.6×); mlp_mnist: CPU 10, GPU 3,300 (330×); one run each."""
    recs = [_rec(0, "cnn_cifar10", "cpu", 100, 100), _rec(1, "cnn_cifar10", "gpu", 560, 100),
            _rec(2, "mlp_mnist", "cpu", 10, 128), _rec(3, "mlp_mnist", "gpu", 3300, 128)]
    for i, r in enumerate(recs):
        write_atomic(tmp_path / f"r{i}.json", r)
    report.setup_plots()
    return report.build_context([tmp_path], use_reference=False)


def test_the_verdict_says_what_the_known_records_say(known):
    pairs = headline.best_pairs(all_pairs(known.costed))
    rows = headline.per_workload(pairs)
    assert sorted(rows["workload"]) == ["cnn_cifar10", "mlp_mnist"]
    comp = headline.compared(known.df)
    assert headline.compared_text(comp) == (
        "Compared: the 2-core AMD EPYC 7B13 against the NVIDIA H100 80GB HBM3 of the same machine.")
    said = headline.sentences(rows, comp, pairs)
    assert said[0] == ("On the 2-core AMD EPYC 7B13, every one of the 2 workloads trains 5.6× to 330× faster on the "
                       "H100 (per sample, each workload's fastest GPU configuration against the same on the CPU).")
    assert said[1].startswith("The smallest gain is cnn_cifar10 on jax (5.6×, batch 100)")
    assert said[1].endswith("the largest is mlp_mnist on jax (330×).")
    # a source epoch: 50,000 CIFAR-10 and 60,000 MNIST samples (data/source_epochs.csv); mlp_mnist saves the most:
    # 60,000 / 10 = 6,000 s = 1.7 h on the CPU, 60,000 / 3,300 = 18 s on the GPU
    assert said[2] == ("The most time saved is on mlp_mnist: one epoch of its source's dataset (60,000 samples) takes "
                       "1.7 h on the CPU and 18 s on the GPU.")
    assert said[-1] == ("The GPU figures rest on 1 run each, the CPU figures on 1 (2 of 2 rest on a single run on one "
                        "side, marked †: no between-run interval).")


def test_the_verdict_names_a_backend_that_loses_and_this_machine(known):
    pairs = headline.best_pairs(all_pairs(known.costed))
    rows = headline.per_workload(pairs)
    slow = pairs.iloc[:1].copy()
    slow["backend"], slow["speedup"] = "torch", 0.72
    import pandas as pd

    comp = headline.compared(known.df, here=("gpu-box", CPU, 2))
    said = headline.sentences(rows, comp, pd.concat([pairs, slow], ignore_index=True))
    assert said[0].startswith("On this 2-core AMD EPYC 7B13, every one of the 2 workloads")
    assert said[0].endswith("but cnn_cifar10 on torch is slower on the GPU (0.72×).")
    assert "of this machine" in headline.compared_text(comp)
    half = rows.copy()
    half.loc[half["workload"] == "cnn_cifar10", "speedup"] = 0.5
    said = headline.sentences(half, comp)
    assert said[0].startswith("On this 2-core AMD EPYC 7B13, 1 of the 2 workloads train faster on the H100 (up to "
                              "330×); cnn_cifar10 does not (0.50×)")


def test_the_verdict_section_shows_chart_sentences_and_a_short_table(known):
    s = sections.build(sections.get("verdict"), known)
    page = s._repr_html_()
    assert s.present and "cgb-fig" in page and page.count("<li>") >= 3
    rows = headline.per_workload(headline.best_pairs(all_pairs(known.costed)))
    tab = sections.get("verdict").glance_table(rows)
    assert len(tab.columns) <= 7 and len(tab) == 2
    assert list(tab["GPU ÷ CPU"]) == ["330× †", "5.60× †"]  # one run: 3 significant digits (fmt.sig_digits)
    assert list(tab["configuration (GPU side)"]) == ["H100 · jax · b128", "H100 · jax · b100"]
    assert list(tab["CPU s / source epoch"]) == ["1.7 h", "8.3 min"]


def test_every_present_section_opens_with_what_it_found(known):
    for mod in sections.modules():
        s = sections.build(mod, known)
        if s.present:
            assert str(s.finding).strip(), s.name
            assert s._repr_html_().index("cgb-finding") < s._repr_html_().index("cgb-about"), s.name


def test_findings_from_known_numbers(known):
    m = all_pairs(known.summary)
    tmpl, *vals = findings.speedup(m)
    text = tmpl.format(*vals)
    assert text.startswith("2 matched pair(s): the GPU trains 5.6× to 330× faster")
    assert "the largest gain is mlp_mnist on jax (batch 128), the smallest cnn_cifar10 on jax" in text
    tmpl, *vals = findings.throughput(known.summary)
    assert tmpl.format(*vals).startswith("4 configuration(s) of 2 workload(s), from 10 to 3,300 samples/s; each "
                                         "workload's fastest configuration is on the GPU for 2 of them.")


def test_short_names():
    assert headline.short_gpu(GPU) == "H100"
    assert headline.short_gpu("NVIDIA GeForce RTX 4090") == "RTX 4090"
    assert headline.short_cpu(CPU) == "AMD EPYC 7B13"
    assert headline.short_cpu("Intel(R) Xeon(R) Platinum 8480+") == "Xeon 8480+"
    assert headline.gpu_side(f"reference H100 2026-11-23: {GPU} · 16 CPUs") == "H100 ref"
    r = {"gpu_machine": f"reference H100 2026-11-23: {GPU} · 16 CPUs", "backend": "jax", "batch_size": 32,
         "precision": "mixed_bfloat16"}
    assert headline.config_key(r) == "H100 ref · jax · b32 · bf16"
    assert [headline.duration(v) for v in (0.42, 41, 720, 11_520, 400_000)] == [
        "0.42 s", "41 s", "12 min", "3.2 h", "4.6 days"]


def test_a_section_with_nothing_is_one_line(tmp_path):
    report.setup_plots()
    ctx = report.build_context([tmp_path], use_reference=False)
    s = sections.build(sections.get("energy"), ctx)
    assert not s.present
    page = s._repr_html_()
    assert "<h2>" not in page and page.count("<p") == 1 and "not shown:" in page


def test_the_rendered_page_leaves_developer_cells_out(tmp_path):
    import nbformat

    from helpers.report.render import DEV_TAG, render_html

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# Title"),
                nbformat.v4.new_markdown_cell("`ctx.df` and helpers/report/sections/", metadata={"tags": [DEV_TAG]})]
    src = tmp_path / "nb.ipynb"
    nbformat.write(copy.deepcopy(nb), str(src))
    page = render_html(src, tmp_path / "out.html").read_text()
    assert "Title" in page and "ctx.df" not in page and "helpers/report" not in page
