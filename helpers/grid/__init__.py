"""Grid files: load, validate every point before anything runs, expand into points and runs.

A grid is YAML::

    description: what this grid is for        # optional
    timeout_s: 1800                           # optional: per-point limit (seconds)
    repeats: 3                                # optional: separate runs of every point (fresh kernels)
    defaults: {epochs: 3}                     # optional: applied to every point
    points:                                   # blocks; a list value expands as a product
      - workload: cnn_cifar10
        backend: [tensorflow, jax, torch]
        device: [cpu, gpu]
        batch_size: [250, 1000]

A point's parameters are the common defaults, overridden by the workload's defaults, the grid's
``defaults`` and the block. ``timeout_s`` and ``repeats`` are the runner's (``params.RUNNER_KEYS``), not
notebook parameters: set at the top, in ``defaults`` or in a block (the block wins). The problems raise one
``GridError`` holding every one of them (``errors``), each ``file:line: where: key ... allowed ...``: the line
from the YAML nodes' marks (``yaml.compose``), of the key or of the list item at fault.

The package: ``files.py`` (the YAML, lines, problems), ``points.py`` (blocks, sizes, expansion, runs),
``estimate.py`` (the time a list of runs should take). Planning a run::

    blocks = sizes(paths)        # each block's size, counted before it is expanded (instant)
    points = expand_all(paths)   # validated points, each with its ``repeats``
    order = runs(points)         # interleaved: every point once, then again (round r: repeats > r)
    est = estimate(order, recs)  # seconds, from the wall times of earlier records on this machine
"""

from __future__ import annotations

from .estimate import Estimate, estimate, fmt_duration
from .files import MAX_REPEATS, MAX_TIMEOUT_S, TOP_KEYS, Block, GridError, load
from .points import MAX_BLOCK_RUNS, expand, expand_all, runs, sizes

__all__ = ["MAX_BLOCK_RUNS", "MAX_REPEATS", "MAX_TIMEOUT_S", "TOP_KEYS", "Block", "Estimate", "GridError", "estimate",
           "expand", "expand_all", "fmt_duration", "load", "runs", "sizes"]
