"""Record builders shared by the report's tests: a minimal ok record (``_rec``), a context over records written to
a folder (``_ctx``), the contract every section keeps (``_check_sections``)."""

from __future__ import annotations

from markupsafe import Markup

from helpers import report
from helpers.paths import PROJECT_ROOT
from helpers.record.writer import write_atomic
from helpers.report.publish import sections

REFERENCE = PROJECT_ROOT / "reference" / "h100" / "records"


def _rec(i=0, **kw) -> dict:
    base = {"schema": 1, "point_id": f"p{i}", "workload": "cnn_cifar10", "backend": "jax", "device": "cpu",
            "device_used": "cpu", "status": "ok", "reason": None, "params": {"threads": 0, "precision": "float32"},
            "data_source": "synthetic", "n_train": 1000, "batch_size": 100, "epochs": 4, "first_epoch_s": 2.0,
            "epoch_s": [1.0, 1.1, 0.9], "median_epoch_s": 1.0, "step_s": 0.1, "samples_per_s": 1000.0,
            "steps_per_epoch": 10, "history": {"loss": [2, 1.5, 1.2, 1.0], "accuracy": [0.1, 0.3, 0.5, 0.6]},
            "utilisation": {"cpu_pct_mean": 90.0}, "energy_j_per_epoch": None,
            "fingerprint": {"host": "h1", "cpu_model": "Some CPU", "cpu_logical": 4, "gpu_names": [],
                            "versions": {"keras": "3.15.1", "jax": "0.10.2"}},
            "started_at": f"2026-01-01T00:00:0{i}", "duration_s": 5.0, "notebook": None}
    base.update(kw)
    return base


def _ctx(tmp_path, recs, **kw):
    kw.setdefault("use_reference", False)  # these records alone (the reference fallback has its own tests)
    for i, r in enumerate(recs):
        write_atomic(tmp_path / f"r{i}.json", r)
    return report.build_context([tmp_path], **kw)


def _check_sections(ctx) -> dict:
    """The contract every section keeps: a Section, present with parts or absent with a reason; never a
    section that failed to build; its HTML escapes and titles it."""
    out = {}
    for mod in sections.modules():
        assert isinstance(mod.TITLE, str) and mod.TITLE and isinstance(mod.LEAD, str) and mod.LEAD, mod.__name__
        s = sections.build(mod, ctx)
        assert isinstance(s, sections.Section) and s.name == mod.__name__.rsplit(".", 1)[-1]
        assert "failed to build" not in (s.reason or ""), (s.name, s.reason, s.parts[-1:])
        assert s.present == (s.reason is None)
        assert s.parts or not s.present, s.name
        page = s._repr_html_()
        assert f'id="{s.name}"' in page and str(Markup.escape(s.title)) in page
        out[s.name] = s
    return out
