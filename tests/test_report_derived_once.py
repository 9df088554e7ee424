"""Each derived table of the report is computed once, in one place: the context (``Context.best``, the verdict's
best over best; ``Context.not_learned``; ``Context.pairs``, the matched pairs). The sections, the findings,
verdict.csv and the predictions read them from there, so they cannot disagree and a report never computes one
twice."""

from __future__ import annotations

import ast

from support.records import _ctx, _rec

from helpers import report
from helpers.paths import PROJECT_ROOT
from helpers.report.derive import best, context
from helpers.report.publish import csvs, sections

HELPERS = PROJECT_ROOT / "helpers"
ONE_PLACE = {"best_over_best": {"helpers/report/derive/best.py", "helpers/report/derive/context.py"},
             "did_not_learn": {"helpers/report/derive/best.py", "helpers/report/derive/context.py"},
             "all_pairs": {"helpers/report/derive/pairs.py", "helpers/report/derive/context.py"},
             "matched_pairs": {"helpers/report/derive/pairs.py"}}


def _records():
    out = []
    for i, (backend, device, sps) in enumerate((("tensorflow", "cpu", 10_000), ("jax", "cpu", 1_000),
                                                ("jax", "gpu", 240_000), ("torch", "gpu", 60_000))):
        for k in range(2):
            s = sps * (0.95 + 0.1 * k)
            out.append(_rec(10 * i + k, workload="cnn_cifar10", backend=backend, device=device, device_used=device,
                            batch_size=1000, n_train=1000, median_epoch_s=1000 / s, epoch_s=[1000 / s] * 3,
                            samples_per_s=s, step_s=1000 / s, steps_per_epoch=1, params={"threads": 0},
                            point_id=f"{backend}-{device}-{k}",
                            fingerprint={"host": "h1", "cpu_model": "Some CPU", "cpu_logical": 4,
                                         "gpu_names": ["NVIDIA H100 80GB HBM3"], "versions": {"keras": "3.15.1"}}))
    return out


def _counted(monkeypatch, module, name: str, tmp_path):
    """Render a small report (every section) with ``module.name`` counting its calls: (calls, context, page)."""
    calls = []
    real = getattr(module, name)

    def counted(summ):
        calls.append(1)
        return real(summ)

    monkeypatch.setattr(module, name, counted)
    report.setup_plots()
    ctx = _ctx(tmp_path / "records", _records())
    return calls, ctx, "".join(s._repr_html_() for s in sections.build_all(ctx))


def test_a_report_computes_the_best_over_best_table_once(tmp_path, monkeypatch):
    calls, ctx, html = _counted(monkeypatch, best, "best_over_best", tmp_path)
    paths = csvs.write_csvs(ctx, tmp_path / "out")
    assert len(calls) == 1
    assert len(ctx.best) == 1 and "cnn_cifar10" in html  # the table the page and the CSV were drawn from
    assert "cnn_cifar10" in paths[2].read_text(encoding="utf-8")


def test_a_report_computes_the_matched_pairs_once(tmp_path, monkeypatch):
    calls, ctx, html = _counted(monkeypatch, context, "all_pairs", tmp_path)
    assert len(calls) == 1
    assert len(ctx.pairs) and "matched pair" in html  # the speedup section drew them


def test_no_module_but_the_context_computes_a_derived_table():
    offenders = []
    for path in sorted(HELPERS.rglob("*.py")):
        rel = path.relative_to(PROJECT_ROOT).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                f = node.func
                name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
                if name in ONE_PLACE and rel not in ONE_PLACE[name]:
                    offenders.append(f"{rel}:{node.lineno} {name}")
    assert not offenders, offenders
