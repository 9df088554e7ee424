"""GPU fidelity benchmark: the suite's samples/s against bare Keras and bare training loops.

    python benchmarks/studies/gpu_fidelity.py --out fidelity.json            # on a machine with an NVIDIA GPU
    python benchmarks/studies/gpu_fidelity.py --workloads resnet50 --precisions mixed_bfloat16 --out r.json
    python benchmarks/studies/gpu_fidelity.py --cpu-smoke --out /tmp/smoke.json   # tiny, on the CPU
    python benchmarks/studies/gpu_fidelity.py --table-from a.json b.json         # merge runs, print the table

For each workload (vgg_cifar10, resnet50) and precision (float32, mixed_bfloat16), at one batch size,
on the same machine, in one run of this script, it measures steady-state samples/s of:

* ``suite-jax``, ``suite-torch``: a grid point through ``helpers.runner.notebook.run_point`` (fresh kernel,
  papermill, the workload notebook; synthetic data as numpy arrays fed by Keras' data adapter,
  ``jit_compile='auto'``): the record's ``samples_per_s``, the median of the steady epochs;
* ``bare-keras-jax``, ``bare-keras-torch``: ``benchmarks/bare_keras.py``, the same model from the
  registry's builder, numpy data, ``fit`` timed after a warm-up epoch;
* ``bare-jax``: ``benchmarks/bare_jax.py``, the same network in plain JAX, one jitted donated train
  step, data on the device (median of chunks of steps as long as an epoch);
* ``bare-torch``: ``benchmarks/bare_torch.py``, torch.nn / torchvision, channels_last,
  torch.compile, autocast bf16, data on the device (same chunking).

The suite and bare Keras read the same number of samples per epoch (``batch x batches-per-epoch``) and
the bare loops time chunks of that many steps, so every figure is an epoch-sized median. vgg_cifar10
runs without augmentation everywhere (``--augment`` keeps it in the suite and bare Keras; the bare
loops never have it). Each implementation runs in its own process, one after another; a crash, an
out-of-memory or a missing module is recorded in its cell and the rest goes on. A total time budget
(``--budget-s``) skips what would start too late. The JSON (``--out``) is rewritten after every run, so
a run cut short still leaves its results.

Ratios (the targets): ``suite/bare-keras`` per backend (within 5%), the best suite backend over
the best bare loop (>= 1), and ResNet-50 mixed_bfloat16 at >= 4,000 images/s (best suite backend).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from helpers.paths import without_prefix  # noqa: E402

IMPLS = ("suite-jax", "bare-keras-jax", "suite-torch", "bare-keras-torch", "bare-jax", "bare-torch")
EXTRA_IMPLS = ("bare-keras-jax-devdata", "bare-keras-torch-devdata")  # Keras fed backend tensors
WORKLOADS = ("resnet50", "vgg_cifar10")  # run order: the costly, most watched row first
PRECISIONS = ("float32", "mixed_bfloat16")
DEFAULT_BATCH = {"vgg_cifar10": 512, "resnet50": 256}
DEFAULT_BPE = {"vgg_cifar10": 196, "resnet50": 12}  # batches per epoch
IMAGE = {"vgg_cifar10": (32, 10), "resnet50": (224, 1000)}  # image size, classes
SMOKE_IMAGE = {"vgg_cifar10": 32, "resnet50": 64}
TARGET_KERAS = 0.05  # suite within 5% of bare Keras
TARGET_LOOP = 1.0  # best suite >= best bare loop
TARGET_R50_BF16 = 4000.0  # images/s


def per_workload(text: str | None, defaults: dict, name: str) -> dict:
    """``512`` (every workload) or ``vgg_cifar10=512,resnet50=256`` over ``defaults``."""
    out = dict(defaults)
    if not text:
        return out
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        if "=" in part:
            k, v = part.split("=", 1)
            if k not in defaults:
                raise SystemExit(f"error: --{name}: unknown workload {k!r}; known: {', '.join(defaults)}")
            out[k] = int(v)
        else:
            out = dict.fromkeys(out, int(part))
    if min(out.values()) < 1:
        raise SystemExit(f"error: --{name} must be >= 1: {text}")
    return out


def write_json(path: Path | None, doc: dict) -> None:
    if path is None:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(doc, indent=1, default=str))
    os.replace(tmp, path)


# ---------------------------------------------------------------- running one implementation

def run_process(cmd: list[str], env: dict, timeout: float) -> dict:
    """Run a bare script; its last stdout line starting with '{' is its result."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=str(ROOT), start_new_session=True)  # own group: compile workers die too
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, err = proc.communicate()
        return {"status": "failed", "error": f"timed out after {timeout:.0f} s (killed)",
                "stderr_tail": (err or "")[-1500:], "wall_s": time.perf_counter() - t0, "cmd": cmd}
    wall = time.perf_counter() - t0
    result = None
    for line in reversed((out or "").strip().splitlines()):
        if line.startswith("{"):
            try:
                result = json.loads(line)
                break
            except json.JSONDecodeError:
                continue
    if proc.returncode != 0 or result is None or not result.get("samples_per_s"):
        tail = (err or "").strip().splitlines()
        lines = [ln for ln in tail if ln.strip() and not ln.startswith(" ")]
        errs = [ln for ln in lines if "Error" in ln.split(":")[0] or ln.lower().startswith("error")]
        last = (errs or lines or [""])[-1]
        return {"status": "failed", "error": f"exit {proc.returncode}: {last[:500]}",
                "stderr_tail": (err or "")[-3000:], "wall_s": wall, "cmd": cmd}
    # Every figure is an epoch-sized median: bare Keras' per-epoch times (the suite's method), where given.
    sps = result.get("epoch_median_samples_per_s") or result["samples_per_s"]
    return {"status": "ok", "samples_per_s": sps, "detail": result, "wall_s": wall, "cmd": cmd}


class Suite:
    """The suite's side: the runner's kernelspec and engine, set up once, points run in fresh kernels."""

    def __init__(self, work: Path):
        os.environ["CGB_OUTPUTS"] = str(work)
        os.environ["CGB_OFFLINE"] = "1"
        import logging

        from helpers.runner import notebook as runner
        from helpers.runner.engine import install_kernelspec, register_engine

        logging.getLogger("papermill").setLevel(logging.WARNING)
        logging.getLogger("traitlets").setLevel(logging.ERROR)
        self.runner = runner
        self.work = work
        self.kernel = install_kernelspec(work / ".jupyter")
        self.engine = register_engine()

    def run(self, cfg: dict, backend: str, timeout: float) -> dict:
        from helpers import params as P
        from helpers import workloads
        from helpers.measure.machine import machine_key
        from helpers.record.ids import point_id

        wl = cfg["workload"]
        p = {**P.COMMON_DEFAULTS, **workloads.get(wl).defaults, "workload": wl, "backend": backend,
             "device": cfg["device"], "batch_size": cfg["batch"], "epochs": cfg["epochs"] + 1,
             "n_train": cfg["batch"] * cfg["bpe"], "n_val": 0, "data_source": "synthetic",
             "precision": cfg["precision"], "jit_compile": "auto", "seed": 0}
        if wl == "vgg_cifar10":
            p["augment"] = cfg["augment"]
        if wl == "resnet50":
            p["image_size"] = cfg["image_size"]
        p["point_id"] = point_id(p, machine_key())
        t0 = time.perf_counter()
        rec = self.runner.run_point(self.engine, p, self.work / "suite", self.kernel, timeout, print)
        wall = time.perf_counter() - t0
        keep = {k: rec.get(k) for k in ("status", "reason", "device_used", "device_detail", "n_train",
                                        "steps_per_epoch", "first_epoch_s", "epoch_s", "median_epoch_s",
                                        "step_s", "samples_per_s", "samples_per_s_spread", "data_source",
                                        "model_params", "notebook", "wall_s")}
        util = rec.get("utilisation") or {}
        keep["utilisation"] = {k: v for k, v in util.items() if not isinstance(v, (list, dict))}
        if rec.get("status") == "ok" and rec.get("device_used") != cfg["device"]:
            return {"status": "failed", "error": f"ran on {rec.get('device_used')}, not {cfg['device']}",
                    "detail": keep, "wall_s": wall}
        if rec.get("status") != "ok" or not rec.get("samples_per_s"):
            return {"status": rec.get("status") or "failed",
                    "error": (rec.get("reason") or "no samples_per_s in the record")[:1500],
                    "detail": keep, "wall_s": wall}
        return {"status": "ok", "samples_per_s": rec["samples_per_s"], "detail": keep, "wall_s": wall}


def bare_env(backend: str | None, cfg: dict) -> dict:
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "PYTHONUNBUFFERED": "1"}
    if backend:
        env["KERAS_BACKEND"] = backend
    if cfg["device"] == "cpu":
        env["CUDA_VISIBLE_DEVICES"] = ""
        env["JAX_PLATFORMS"] = "cpu"
    else:  # as the suite's GPU points (helpers.point.device.force); CUDA_VISIBLE_DEVICES left as it is
        env["JAX_PLATFORMS"] = "cuda"
    return env


def bare_cmd(impl: str, cfg: dict) -> tuple[list[str], str | None]:
    wl, size, classes = cfg["workload"], cfg["image_size"], cfg["classes"]
    py = sys.executable
    if impl.startswith("bare-keras-"):
        backend = impl.split("-")[2]
        cmd = [py, str(ROOT / "benchmarks" / "bare_keras.py"), wl, "--n", str(cfg["batch"] * cfg["bpe"]),
               "--batch", str(cfg["batch"]), "--epochs", str(cfg["epochs"]), "--precision", cfg["precision"],
               "--shape", f"{size},{size},3", "--classes", str(classes), "--device", cfg["device"]]
        if cfg["augment"] and wl == "vgg_cifar10":
            cmd.append("--augment")
        if impl.endswith("-devdata"):
            cmd += ["--data", "device"]
        return cmd, backend
    script = "bare_jax.py" if impl == "bare-jax" else "bare_torch.py"
    cmd = [py, str(ROOT / "benchmarks" / script), wl, "--batch", str(cfg["batch"]), "--precision",
           cfg["precision"], "--image-size", str(size), "--classes", str(classes), "--steps", str(cfg["bpe"]),
           "--epochs", str(cfg["epochs"]), "--device", cfg["device"]]
    if cfg["smoke"]:
        cmd += ["--warmup", "1", "--distinct", "2"]
    if impl == "bare-torch" and cfg["no_compile"]:
        cmd.append("--no-compile")
    return cmd, None


# ---------------------------------------------------------------- ratios and table

def sps(row: dict, impl: str) -> float | None:
    cell = row["results"].get(impl) or {}
    return cell.get("samples_per_s") if cell.get("status") == "ok" else None


PAIRED_MIN = 3  # paired repeats from this many calls decide the 5% check (else the ratio of medians)


def paired(row: dict, a: str, b: str) -> dict | None:
    """``a``/``b`` per call: repeats of the two cells that came from the same run file (the same call,
    one after the other on the same machine), so that drift between calls (clocks, other tenants)
    cancels. None where no call measured both."""
    def by_source(impl):
        c = row["results"].get(impl) or {}
        if c.get("status") != "ok":
            return {}
        return {rp["source"]: rp["samples_per_s"] for rp in cell_repeats(c, "this run") if rp.get("samples_per_s")}

    sa, sb = by_source(a), by_source(b)
    pairs = [sa[k] / sb[k] for k in sa if k in sb]
    if not pairs:
        return None
    return {"n": len(pairs), "median": statistics.median(pairs), "min": min(pairs), "max": max(pairs),
            "ratios": [round(x, 4) for x in pairs]}


def ratios(row: dict) -> dict:
    r = {}
    for b in ("jax", "torch"):
        s, k = sps(row, f"suite-{b}"), sps(row, f"bare-keras-{b}")
        r[f"suite_{b}/bare_keras_{b}"] = s / k if s and k else None
        pr = paired(row, f"suite-{b}", f"bare-keras-{b}")
        r[f"paired_{b}"] = pr
        if pr and pr["n"] >= PAIRED_MIN:  # the better estimate once there are enough calls
            r[f"suite_{b}/bare_keras_{b}"] = pr["median"]
    suites = {b: sps(row, f"suite-{b}") for b in ("jax", "torch")}
    loops = {b: sps(row, f"bare-{b}") for b in ("jax", "torch")}
    bs = max(((v, b) for b, v in suites.items() if v), default=(None, None))
    bl = max(((v, b) for b, v in loops.items() if v), default=(None, None))
    r["best_suite"] = bs[0]
    r["best_suite_backend"] = bs[1]
    r["best_bare_loop"] = bl[0]
    r["best_bare_loop_impl"] = f"bare-{bl[1]}" if bl[1] else None
    r["best_suite/best_bare_loop"] = bs[0] / bl[0] if bs[0] and bl[0] else None
    checks = {}
    for b in ("jax", "torch"):
        v = r[f"suite_{b}/bare_keras_{b}"]
        checks[f"suite_{b}_within_5pct_of_bare_keras"] = None if v is None else abs(v - 1) <= TARGET_KERAS
    v = r["best_suite/best_bare_loop"]
    checks["best_suite_ge_best_bare_loop"] = None if v is None else v >= TARGET_LOOP
    if row["workload"] == "resnet50" and row["precision"] == "mixed_bfloat16" and not row.get("smoke"):
        checks["resnet50_bf16_ge_4000_img_s"] = None if bs[0] is None else bs[0] >= TARGET_R50_BF16
    r["checks"] = checks
    return r


def cell_figure(cell: dict) -> float:
    """A cell's samples/s: the epoch median where the run gave per-epoch times (bare Keras since it
    does), else the figure it recorded."""
    detail = cell.get("detail") or {}
    return detail.get("epoch_median_samples_per_s") or cell["samples_per_s"]


def cell_repeats(cell: dict, source: str) -> list[dict]:
    """An ok cell's measurements: the repeats a merge gave it, else its one figure from ``source``."""
    return list(cell.get("repeats") or [{"samples_per_s": cell_figure(cell), "source": source}])


def merge_cell(old: dict | None, new: dict, source: str) -> dict:
    """Merged runs: ok measurements of one cell are kept as repeats; the cell's figure is their median.
    A failed cell never replaces an ok one."""
    if new.get("status") != "ok":
        return old if old is not None else new
    repeats = ((cell_repeats(old, "earlier") if old is not None and old.get("status") == "ok" else [])
               + cell_repeats(new, source))
    return {**new, "samples_per_s": statistics.median(r["samples_per_s"] for r in repeats), "repeats": repeats}


def short_sources(doc: dict) -> dict:
    """Repeats name their run file by the shortest path suffix that still tells the files apart (two
    calls' ``fid_bf16.json`` stay two calls for the pairing); no folder of the merging machine stays in."""
    rows = doc.get("rows", [])
    reps = [rp for row in rows for c in row["results"].values() for rp in (c.get("repeats") or [])]
    full = list(dict.fromkeys(str(rp["source"]) for rp in reps))
    parts = {f: Path(f).parts for f in full}
    label = {}
    for f in full:
        for k in range(1, len(parts[f]) + 1):
            tail = parts[f][-k:]
            if sum(parts[g][-k:] == tail for g in full) == 1:
                label[f] = "/".join(tail)
                break
        else:
            label[f] = f
    for rp in reps:
        rp["source"] = label[str(rp["source"])]

    def names(meta):  # earlier merges' file lists: file names only
        if isinstance(meta, dict):
            if "merged_from" in meta:
                meta["merged_from"] = [Path(str(m)).name for m in meta["merged_from"]]
            for sub in meta.get("runs") or []:
                names(sub)
    names(doc.get("meta"))
    return doc


def _fmt(v, kind="sps"):
    if v is None:
        return "-"
    return f"{v:,.0f}" if kind == "sps" else f"{v:.3f}"


def table(rows: list[dict]) -> str:
    heads = ["workload", "precision", "batch", *IMPLS, "suite/bk jax", "suite/bk torch", "suite/loop"]
    extra = [i for i in EXTRA_IMPLS if any(i in r["results"] for r in rows)]
    heads[3 + len(IMPLS):3 + len(IMPLS)] = extra
    lines = []
    for row in rows:
        r = row.get("ratios") or ratios(row)
        cells = [row["workload"], row["precision"], str(row["batch"])]
        for impl in (*IMPLS, *extra):
            c = row["results"].get(impl)
            if c is None:
                cells.append("-")
            elif c.get("status") == "ok":
                n = len(c.get("repeats") or [])
                cells.append(_fmt(c["samples_per_s"]) + (f" (n{n})" if n > 1 else ""))
            else:
                cells.append("ERR" if c.get("status") == "failed" else "SKIP")
        cells += [_fmt(r["suite_jax/bare_keras_jax"], "r"), _fmt(r["suite_torch/bare_keras_torch"], "r"),
                  _fmt(r["best_suite/best_bare_loop"], "r")]
        lines.append(cells)
    widths = [max(len(h), *(len(c[i]) for c in lines)) if lines else len(h) for i, h in enumerate(heads)]
    out = ["  ".join(h.rjust(w) for h, w in zip(heads, widths))]
    out += ["  ".join(c.rjust(w) for c, w in zip(cells, widths)) for cells in lines]
    out.append("samples/s: median of steady epochs (suite, bare Keras; bare loops: epoch-sized chunks); "
               "(nN): median of N runs merged; bk = bare Keras; loop = best suite backend / best bare loop")
    out.append("")
    out.append("targets:")
    for row in rows:
        r = row.get("ratios") or ratios(row)
        for name, ok in r["checks"].items():
            mark = "n/a" if ok is None else ("PASS" if ok else "FAIL")
            what = ""
            if name.startswith("suite_"):
                b = name.split("_")[1]
                what = f"suite/bare-keras = {_fmt(r[f'suite_{b}/bare_keras_{b}'], 'r')} (target 0.95-1.05)"
                pr = r.get(f"paired_{b}")
                if pr and pr["n"] >= PAIRED_MIN:
                    what += (f"; median of {pr['n']} paired calls, range {pr['min']:.3f}-{pr['max']:.3f}")
                elif pr:
                    what += f"; ratio of medians ({pr['n']} paired call(s) only)"
            elif name.startswith("best_suite"):
                what = (f"suite-{r['best_suite_backend'] or '?'} {_fmt(r['best_suite'])} / "
                        f"{r['best_bare_loop_impl'] or 'bare-?'} "
                        f"{_fmt(r['best_bare_loop'])} = {_fmt(r['best_suite/best_bare_loop'], 'r')} (target >= 1)")
            else:
                what = f"best suite {_fmt(r['best_suite'])} images/s (target >= 4,000)"
            out.append(f"  {mark:4}  {row['workload']} {row['precision']}: {name}: {what}")
    errs = [(row, impl, c) for row in rows for impl, c in row["results"].items() if c.get("status") != "ok"]
    if errs:
        out.append("")
        out.append("not measured:")
        for row, impl, c in errs:
            out.append(f"  {row['workload']} {row['precision']} {impl}: {c.get('status')}: "
                       f"{str(c.get('error'))[:300]}")
    return "\n".join(out)


# ---------------------------------------------------------------- main

def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workloads", default=",".join(WORKLOADS))
    ap.add_argument("--precisions", default=",".join(PRECISIONS))
    ap.add_argument("--impls", default=",".join(IMPLS),
                    help=f"any of {', '.join(IMPLS + EXTRA_IMPLS)} (the last two: Keras fed tensors already "
                         "on the device, to price the numpy data adapter)")
    ap.add_argument("--batch", default=None, help="512 or vgg_cifar10=512,resnet50=256 (the defaults)")
    ap.add_argument("--batches-per-epoch", default=None,
                    help="n_train = batch x this; default vgg_cifar10=196,resnet50=12")
    ap.add_argument("--epochs", type=int, default=3, help="steady epochs (suite: +1 first epoch) / chunks")
    ap.add_argument("--budget-s", type=float, default=480.0,
                    help="total time; a run is not started with less than --min-run-s left, and is killed "
                         "when the budget runs out")
    ap.add_argument("--min-run-s", type=float, default=30.0)
    ap.add_argument("--run-timeout-s", type=float, default=300.0, help="limit of one run")
    ap.add_argument("--augment", action="store_true", help="vgg_cifar10: augmentation on in suite and bare Keras")
    ap.add_argument("--no-compile", action="store_true", help="bare-torch without torch.compile")
    ap.add_argument("--out", type=Path, default=None, help="JSON results (rewritten after every run)")
    ap.add_argument("--work-dir", type=Path, default=None,
                    help="suite records and executed notebooks (default: a temporary folder)")
    ap.add_argument("--cpu-smoke", action="store_true",
                    help="tiny sizes on the CPU: batch 8, 2 batches per epoch, 2 steady epochs, images 32/64, "
                         "no torch.compile")
    ap.add_argument("--table-from", nargs="+", type=Path, default=None,
                    help="print the table of earlier --out files (merged; --out writes the merge)")
    args = ap.parse_args(argv)

    if args.table_from:
        merged, metas = {}, []
        for f in args.table_from:  # rows of the same workload, precision and batch: cells merged
            d = json.loads(f.read_text())
            for row in d.get("rows", []):
                key = (row["workload"], row["precision"], row["batch"])
                if key not in merged:
                    merged[key] = {**row, "results": {}}
                for impl, cell in row["results"].items():
                    merged[key]["results"][impl] = merge_cell(merged[key]["results"].get(impl), cell, str(f))
            metas.append(d.get("meta"))
        rows = list(merged.values())
        for row in rows:
            row["ratios"] = ratios(row)
        print(table(rows))
        merged_doc = short_sources({"meta": {"merged_from": [f.name for f in args.table_from], "runs": metas},
                                    "rows": rows})
        # a merge is what gets published: paths inside the project become project-relative
        write_json(args.out, without_prefix(merged_doc, ROOT))
        return 0

    workloads = [w.strip() for w in args.workloads.split(",") if w.strip()]
    precisions = [p.strip() for p in args.precisions.split(",") if p.strip()]
    impls = [i.strip() for i in args.impls.split(",") if i.strip()]
    for w in workloads:
        if w not in WORKLOADS:
            raise SystemExit(f"error: --workloads: {w!r}; known: {', '.join(WORKLOADS)}")
    for p in precisions:
        if p not in PRECISIONS:
            raise SystemExit(f"error: --precisions: {p!r}; known: {', '.join(PRECISIONS)}")
    for i in impls:
        if i not in IMPLS + EXTRA_IMPLS:
            raise SystemExit(f"error: --impls: {i!r}; known: {', '.join(IMPLS + EXTRA_IMPLS)}")
    smoke = args.cpu_smoke
    batch = per_workload(args.batch, {w: 8 for w in WORKLOADS} if smoke else DEFAULT_BATCH, "batch")
    bpe = per_workload(args.batches_per_epoch, {w: 2 for w in WORKLOADS} if smoke else DEFAULT_BPE,
                       "batches-per-epoch")
    epochs = 2 if smoke and args.epochs == 3 else args.epochs
    if epochs < 1:
        raise SystemExit("error: --epochs must be >= 1")
    device = "cpu" if smoke else "gpu"

    work = args.work_dir or Path(tempfile.mkdtemp(prefix="cgb-fidelity-"))
    work = work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    t_start = time.perf_counter()
    deadline = t_start + args.budget_s
    try:
        from helpers.measure.fingerprint import fingerprint

        fp = fingerprint()
    except Exception as exc:
        fp = {"error": f"{type(exc).__name__}: {exc}"}
    meta = {"started_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"), "argv": sys.argv[1:],
            "device": device, "smoke": smoke, "epochs": epochs, "budget_s": args.budget_s,
            "work_dir": str(work), "python": sys.executable, "fingerprint": fp}
    doc = {"meta": meta, "rows": []}
    suite = None
    suite_error = None
    if any(i.startswith("suite-") for i in impls):
        try:
            suite = Suite(work)
        except Exception as exc:  # papermill missing, ...
            suite_error = f"{type(exc).__name__}: {exc}"

    for wl in workloads:
        size, classes = IMAGE[wl]
        if smoke:
            size = SMOKE_IMAGE[wl]
        for prec in precisions:
            cfg = {"workload": wl, "precision": prec, "batch": batch[wl], "bpe": bpe[wl], "epochs": epochs,
                   "image_size": size, "classes": classes, "device": device, "augment": args.augment,
                   "no_compile": args.no_compile or smoke, "smoke": smoke}
            row = {"workload": wl, "precision": prec, "batch": batch[wl], "batches_per_epoch": bpe[wl],
                   "n_train": batch[wl] * bpe[wl], "image_size": size, "classes": classes,
                   "steady_epochs": epochs, "augment": args.augment and wl == "vgg_cifar10", "smoke": smoke,
                   "results": {}}
            doc["rows"].append(row)
            for impl in impls:
                left = deadline - time.perf_counter()
                if left < args.min_run_s:
                    cell = {"status": "skipped", "error": f"time budget: {max(left, 0):.0f} s left of "
                                                         f"{args.budget_s:.0f} s"}
                else:
                    timeout = min(args.run_timeout_s, left)
                    print(f"[{time.perf_counter() - t_start:6.0f}s] {wl} {prec} batch {batch[wl]}: {impl} ...",
                          flush=True)
                    try:
                        if impl.startswith("suite-"):
                            if suite is None:
                                cell = {"status": "failed", "error": f"suite not available: {suite_error}"}
                            else:
                                cell = suite.run(cfg, impl.split("-")[1], timeout)
                        else:
                            cmd, backend = bare_cmd(impl, cfg)
                            cell = run_process(cmd, bare_env(backend, cfg), timeout)
                    except Exception as exc:
                        cell = {"status": "failed", "error": f"{type(exc).__name__}: {exc}"[:1500]}
                row["results"][impl] = cell
                row["ratios"] = ratios(row)
                msg = (f"{cell['samples_per_s']:,.0f} samples/s" if cell.get("status") == "ok"
                       else f"{cell.get('status')}: {str(cell.get('error'))[:200]}")
                print(f"[{time.perf_counter() - t_start:6.0f}s]   {impl}: {msg} ({cell.get('wall_s', 0):.0f} s)",
                      flush=True)
                meta["elapsed_s"] = time.perf_counter() - t_start
                write_json(args.out, doc)
    meta["elapsed_s"] = time.perf_counter() - t_start
    write_json(args.out, doc)
    print()
    print(table(doc["rows"]))
    print(f"\n{meta['elapsed_s']:.0f} s; {device}; suite records and notebooks under {work}"
          + (f"; results: {args.out}" if args.out else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
