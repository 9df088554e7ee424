"""The report's first screen: the verdict's generated sentences against records whose numbers are known, the short
names, the at-a-glance table's width, and (``page_checks``, used by the browser tests in test_report.py) what a
reader sees at 1400×900: the headline chart and the verdict within the first 900 px, no table row taller than three
lines, no Python module or context name in the text, at most 25 screens."""

from __future__ import annotations

import copy

import pytest
from support.first_screen import CPU, GPU, HEIGHT, MAX_SCREENS, WIDTH, _rec, assert_first_screen, page_facts  # noqa: F401,E501

from helpers import report
from helpers.record.writer import write_atomic
from helpers.report.derive import best
from helpers.report.derive.pairs import all_pairs
from helpers.report.publish import sections
from helpers.report.words import findings, headline


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
    rows = best.best_over_best(known.costed)
    assert sorted(rows["workload"]) == ["cnn_cifar10", "mlp_mnist"]
    comp = headline.compared(known.df)
    assert headline.compared_text(comp) == (
        "Compared: the 2-CPU AMD EPYC 7B13 against the NVIDIA H100 80GB HBM3 of the same machine.")
    said = headline.sentences(rows, comp, pairs)
    assert said[0] == ("On the 2-CPU AMD EPYC 7B13, every one of the 2 workloads trains 5.60× to 330× faster on "
                       "the H100 (per sample, each workload's fastest GPU configuration against its fastest CPU "
                       "configuration, any backend, at the same batch size and precision).")
    assert said[1].startswith("The smallest gain is cnn_cifar10, JAX on 2 CPU cores → JAX on the H100 (5.60×, "
                              "batch 100)")
    assert said[1].endswith("the largest is mlp_mnist, JAX on 2 CPU cores → JAX on the H100 (330×).")
    # a source epoch: 50,000 CIFAR-10 and 60,000 MNIST samples (data/source_epochs.csv); mlp_mnist saves the most:
    # 60,000 / 10 = 6,000 s = 1.7 h on the CPU, 60,000 / 3,300 = 18 s on the GPU
    assert said[2] == ("The most time saved is on mlp_mnist: one epoch of its source's dataset (60,000 samples) takes "
                       "1.7 h † on the CPU and 18 s † on the GPU.")  # derived from one-run figures: their mark
    assert said[-1] == ("The GPU figures rest on 1 run each, the CPU figures on 1 (2 of 2 rest on a single run on one "
                        "side, marked †: no between-run interval).")


def test_the_verdict_names_a_backend_that_loses_and_this_machine(known):
    pairs = headline.best_pairs(all_pairs(known.costed))
    rows = best.best_over_best(known.costed)
    slow = pairs.iloc[:1].copy()
    slow["backend"], slow["speedup"], slow["digits"] = "torch", 0.72, 2
    import pandas as pd

    comp = headline.compared(known.df, here=("gpu-box", CPU, 2, known.folders[0]))  # this host's outputs folder
    said = headline.sentences(rows, comp, pd.concat([pairs, slow], ignore_index=True))
    assert said[0].startswith("On this 2-CPU AMD EPYC 7B13, every one of the 2 workloads")
    assert said[0].endswith("but like for like, cnn_cifar10 on torch is slower on the GPU (0.72×).")
    assert "of this machine" in headline.compared_text(comp)
    half = rows.copy()
    half.loc[half["workload"] == "cnn_cifar10", "speedup"] = 0.5
    said = headline.sentences(half, comp)
    assert said[0].startswith("On this 2-CPU AMD EPYC 7B13, 1 of the 2 workloads train faster on the H100 (up to "
                              "330×); cnn_cifar10 does not (0.500×)")


def test_the_verdict_section_shows_chart_sentences_and_a_short_table(known):
    s = sections.build(sections.get("verdict"), known)
    page = s._repr_html_()
    assert s.present and "cgb-fig" in page and page.count("<li>") >= 3
    rows = best.best_over_best(known.costed)
    tab = sections.get("verdict").glance_table(rows)
    assert len(tab.columns) <= 7 and len(tab) == 2
    assert list(tab["GPU ÷ CPU"]) == ["330× †", "5.60× †"]  # one run: 3 significant digits (precision.sig_digits)
    assert list(tab["sides compared: CPU → GPU"]) == ["JAX on 2 CPU cores → JAX on the H100 · b128",
                                                      "JAX on 2 CPU cores → JAX on the H100 · b100"]
    assert list(tab["CPU time / source epoch"]) == ["1.7 h †", "8.3 min †"]


def test_every_present_section_opens_with_what_it_found(known, charts_not_drawn):
    for mod in sections.modules():
        s = sections.build(mod, known)
        if s.present:
            assert str(s.finding).strip(), s.name
            assert s._repr_html_().index("cgb-finding") < s._repr_html_().index("cgb-about"), s.name


def test_findings_from_known_numbers(known):
    m = all_pairs(known.summary)
    tmpl, *vals = findings.speedup(m)
    text = tmpl.format(*vals)
    assert text.startswith("2 matched pair(s): the GPU trains 5.60× to 330× faster")
    assert "the largest gain is mlp_mnist on jax (batch 128), the smallest cnn_cifar10 on jax" in text
    tmpl, *vals = findings.throughput(known.summary)
    assert tmpl.format(*vals).startswith("4 configuration(s) of 2 workload(s), from 10.0 to 3,300 samples/s; each "
                                         "workload's fastest configuration is on the GPU for 2 of them.")


def test_short_names(monkeypatch):
    from helpers.report.load import reference

    assert headline.short_gpu(GPU) == "H100"
    assert headline.short_gpu("NVIDIA GeForce RTX 4090") == "RTX 4090"
    assert headline.short_cpu(CPU) == "AMD EPYC 7B13"
    assert headline.short_cpu("Intel(R) Xeon(R) Platinum 8480+") == "Xeon 8480+"
    label = f"reference H100 2026-11-23: {GPU} · 16 CPUs"
    assert headline.gpu_side(label).startswith("“reference H100")  # a name alone: a record's, quoted
    monkeypatch.setattr(reference, "BUNDLED", {label})  # a name reference_rows gave rows read under reference/
    assert headline.gpu_side(label) == "H100 ref"
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

    from helpers.report.publish.render import DEV_TAG, render_html

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# Title"),
                nbformat.v4.new_markdown_cell("`ctx.df` and helpers/report/publish/sections/",
                                              metadata={"tags": [DEV_TAG]})]
    src = tmp_path / "nb.ipynb"
    nbformat.write(copy.deepcopy(nb), str(src))
    page = render_html(src, tmp_path / "out.html").read_text()
    assert "Title" in page and "ctx.df" not in page and "helpers/report" not in page
