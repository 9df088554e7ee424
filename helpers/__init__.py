"""cpu-gpu-bench: helpers for the CPU-versus-GPU Keras training report suite.

Importing this package imports no deep-learning framework: the device and backend must be forced through
environment variables (``helpers.point.device.force``) *before* ``import keras``. Heavy imports happen inside
functions.

One subpackage a concern, lowest layer first (a module imports from its own layer or a lower one;
docs/architecture.md is the map):

    params, paths, exits   every knob once; the project's paths; the runner's exit codes
    record/      the record: its schema, ids, its one writer, reading and checking records
    data/        datasets (Keras loaders or learnable synthetic data), image folders, the augmenting generator
    workloads/   one module a workload: model, compile arguments, data; the notebooks' parameters cells
    measure/     timing, the utilisation sampler, energy, FLOPs, peaks, calibration, the fingerprint
    point/       inside the kernel: forcing the device, distribution over GPUs and processes, data placement,
                 profiling, and the point's session (begin -> fit -> finish)
    grid         grid files -> points
    report/      records -> the report (a context feeding the sections listed in one registry)
    runner/      the command line: plan, claims and shards, starting and watching kernels and processes
"""

import sys as _sys

__version__ = "0.1.0"

# jsonschema, which every process reading a notebook imports (nbformat: the runner, the report, nbconvert), imports
# rfc3987_syntax where it is installed (jupyter-events pulls it in) to check the "iri" string formats, and that
# module builds a Lark grammar as it is imported: 2.7 s of CPU in each such process, for formats no notebook schema
# uses. Marked absent for this process (where nothing imported it yet), jsonschema leaves those two checks out.
_sys.modules.setdefault("rfc3987_syntax", None)  # type: ignore[arg-type]

