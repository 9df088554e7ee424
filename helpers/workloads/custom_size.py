"""custom (1 of 4, its size): what a ``.keras`` model config asks Keras to build, read from the config JSON alone
(no Keras, no recursion): its layers, the depth of its graph and an estimate of its parameters, each bounded before
Keras builds anything.

    s = size(cfg)      # Size(layers=2, depth=2, params=407_050, biggest=[('dense', 'Dense', 401_920), ...], ...)
    check(s)           # ValueError naming the bound and the layer that passes it

Why: Keras builds each layer's weights from its config while it deserializes the model (a layer's ``build_config``
holds its input shape), before any weight is read. A 15 kB archive declaring a ``Dense(60000)`` over 60,000 inputs
asked for 14.4 GB of float32 weights (the process aborted, SIGABRT, no message); a 103 kB archive of 20,000 layers
took 237 s and 1.1 GB to fail with a RecursionError (Keras walks a model's graph recursively). So, before Keras:

- ``MAX_LAYERS`` (5,000) layers in all (inputs aside), nested models and wrapped layers included, a layer called
  n times counted n times: NASNetLarge, the largest of keras.applications, has 1,040;
- ``MAX_SEQUENTIAL`` (500) layers in a Sequential: Keras rebuilds a Sequential's graph at each layer it adds while
  loading it (300 layers loaded in 24 s, 600 in 131 s on a 2-core machine);
- ``MAX_DEPTH`` (1,500) layer calls on the longest path of a model's graph: EfficientNetV2L, the deepest of
  keras.applications, has 1,030 (DenseNet201 708, ResNet152V2 558);
- ``MAX_PASSES`` (10) passes of Keras' loader over a functional model's layer list (``_graph``): one for a model
  Keras saved, two with a layer shared across the graph; a chain listed backwards takes one a layer;
- ``max_params()`` parameters: 2e9 (8 GB of float32 weights; ConvNeXtXLarge, the largest of keras.applications,
  has 350 million), or the machine's physical memory / 16 bytes where that is fewer (the float32 weights and
  Keras' copy of them read from the archive within half of it: 1.5e9 on 24 GB).

The estimate counts the weights of Keras' built-in layers from their configs and input shapes (``build_config``,
which Keras writes for every layer it built): Dense, EinsumDense, the convolutions (transposed, depthwise, separable,
ConvLSTM), Embedding, SimpleRNN/GRU/LSTM (and their cells in an RNN), wrappers (Bidirectional, TimeDistributed,
SpectralNormalization) by the layers they wrap, the normalisations, PReLU, the attention layers. A layer of those
kinds without an input shape in its config is refused (Keras would build it from a shape the config does not say);
a layer of another kind (yours, registered) counts 0. Keras' own count (``model.count_params()``) is the record's.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from .custom_params import BIG, as_shape, input_shapes, layer_params, next_shape

MAX_LAYERS = 5_000
MAX_SEQUENTIAL = 500
MAX_DEPTH = 1_500
MAX_PASSES = 10
PARAMS_CAP = 2_000_000_000

# layers that bring code or graphs from outside the archive: a SavedModel read from a path (TFSMLayer), a JAX or
# Flax function (JaxLayer, FlaxLayer): refused in any model
FOREIGN = ("TFSMLayer", "JaxLayer", "FlaxLayer")


@dataclass
class Size:
    layers: int = 0
    depth: int = 0  # the longest path of a model's graph, in layer calls
    sequential: int = 0  # the layers of the longest Sequential
    passes: int = 1  # the passes Keras' loader makes over a model's layer list (``_graph``)
    params: int = 0
    biggest: list = field(default_factory=list)  # [(name, class, params)], the largest first (at most 3)
    unknown: list = field(default_factory=list)  # classes from outside Keras (yours, registered): counted 0
    no_shape: list = field(default_factory=list)  # [(name, class)]: no input shape where the estimate needs one


def max_params() -> int:
    """``PARAMS_CAP``, or the machine's physical memory / 16 bytes where that is fewer (module docstring)."""
    try:
        mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return PARAMS_CAP
    return int(min(PARAMS_CAP, max(mem, 2**30) // 16))


def _calls(node: dict) -> int:
    nodes = node.get("inbound_nodes")
    return max(1, len(nodes)) if isinstance(nodes, list) else 1


def _graph(model: dict) -> tuple[int, int]:
    """(the longest path of a model's graph in layer calls, the passes Keras' loader makes over its layer list), without
    recursion; ``ValueError`` for a graph with a cycle. A Sequential: its layers, one pass.

    Keras' ``functional_from_config`` goes over the layer list again and again, each time calling every layer whose
    inputs exist, until all are called: a graph listed in its order (as Keras writes it) takes one pass, a chain listed
    backwards one pass a layer (and an exception for each layer not ready), so the passes are counted here: a call
    runs in the pass of its latest input, or the next one where that input's layer is listed after it."""
    from .custom_json import walk

    c = model.get("config") or {}
    layers = [la for la in c.get("layers") or [] if isinstance(la, dict) and isinstance(la.get("config"), dict)]
    if model.get("class_name") == "Sequential":
        return sum(la.get("class_name") != "InputLayer" for la in layers), 1
    if not any("inbound_nodes" in la for la in layers):  # no graph (a subclassed model's own layers)
        return min(len(layers), 1), 1
    pos, preds = {}, {}
    for i, la in enumerate(layers):
        name = la.get("name") if isinstance(la.get("name"), str) else str((la.get("config") or {}).get("name"))
        pos.setdefault(name, i)
        nodes = la.get("inbound_nodes") if isinstance(la.get("inbound_nodes"), list) else []
        for k, nd in enumerate(nodes):
            into = {(name, k - 1)} if k else set()  # a layer's calls run in their order
            for d in walk(nd):
                tc = d.get("config")
                hist = tc.get("keras_history") if d.get("class_name") == "__keras_tensor__" and type(tc) is dict \
                    else None
                if isinstance(hist, list) and len(hist) >= 2 and isinstance(hist[0], str):
                    into.add((hist[0], hist[1] if type(hist[1]) is int else 0))
            preds[(name, k)] = into
    users: dict = {}
    waiting = {}
    for n, into in preds.items():
        inside = [p for p in into if p in preds]
        waiting[n] = len(inside)
        for p in inside:
            users.setdefault(p, []).append(n)
    depth = {n: 1 for n, w in waiting.items() if w == 0}
    passes = dict.fromkeys(depth, 1)
    ready, done = list(depth), 0
    while ready:
        n = ready.pop()
        done += 1
        for u in users.get(n, []):
            depth[u] = max(depth.get(u, 1), depth[n] + (n[0] != u[0]))
            later = pos.get(n[0], 0) > pos.get(u[0], 0) or (n[0] != u[0] and pos.get(n[0]) == pos.get(u[0]))
            passes[u] = max(passes.get(u, 1), passes[n] + later)
            waiting[u] -= 1
            if waiting[u] == 0:
                ready.append(u)
    if done < len(preds):
        stuck = next(n[0] for n, w in waiting.items() if w > 0)
        raise ValueError(f"has a model graph with a cycle (through layer {stuck[:100]!r}): not a model Keras saved")
    return max(depth.values(), default=0), max(passes.values(), default=1)


def _sequential_shapes(c: dict) -> list:
    """A Sequential's layers, each as (its config, its input shape): from its InputLayer (or its
    ``build_input_shape``) layer by layer (``custom_params.next_shape``), a layer's own ``build_config`` first, for
    the layers whose config gives none (a Sequential written by hand: its Dense layers)."""
    s = as_shape(c.get("build_input_shape"))
    out = []
    for la in c["layers"]:
        if not isinstance(la, dict) or not isinstance(la.get("config"), dict):
            out.append(la)
            continue
        kind = str(la.get("class_name"))
        if kind == "InputLayer":
            s = as_shape(la["config"].get("batch_shape")) or s
            out.append(la)
            continue
        s = (input_shapes(la) or [s])[0]
        out.append((la, s))
        s = next_shape(kind, la["config"], s)
    return out


def size(cfg: dict) -> Size:
    """The model config's ``Size`` (module docstring), from one walk without recursion; ``ValueError`` for a layer
    that brings outside code (``FOREIGN``) or a graph with a cycle."""
    out = Size()
    per: list = []
    stack: list = [cfg]  # layer configs; a wrapped layer's as (its config, its input shape)

    def push(node, shape):
        stack.append((node, shape))

    while stack:
        node, shape = stack.pop(), None
        if type(node) is tuple:
            node, shape = node
        if not isinstance(node, dict) or not isinstance(node.get("config"), dict):
            continue
        c = node["config"]
        if isinstance(c.get("layers"), list):  # a model: its layers, its graph
            d, p = _graph(node)
            if node.get("class_name") == "Sequential":
                out.sequential = max(out.sequential, d)
            out.depth, out.passes = max(out.depth, d), max(out.passes, p)
            out.layers += 1 if node is not cfg else 0
            if node.get("class_name") == "Sequential" and d <= MAX_LAYERS:
                stack.extend(reversed(_sequential_shapes(c)))
            else:
                stack.extend(reversed(c["layers"]))
            continue
        kind = str(node.get("class_name"))[:100]
        name = str(c.get("name", node.get("name", "?")))[:100]
        if kind in FOREIGN:
            raise ValueError(f"has a {kind} layer ({name!r}): it runs a function or a SavedModel from outside the "
                             "archive; the suite loads Keras layers only")
        out.layers += _calls(node) if kind != "InputLayer" else 0
        n, known = layer_params(node, shape, push)
        if n is None:
            out.no_shape.append((name, kind))
            continue
        if not known and not str(node.get("module") or "").startswith("keras"):
            out.unknown.append(kind)
        out.params = min(out.params + n, BIG)
        if n:
            per.append((name, kind, n))
    out.biggest = sorted(per, key=lambda t: -t[2])[:3]
    out.unknown = sorted(set(out.unknown))
    return out


def check(s: Size) -> None:
    """``ValueError`` naming the first bound ``s`` passes (module docstring)."""
    if s.layers > MAX_LAYERS:
        raise ValueError(f"declares {s.layers:,} layers (calls included), more than {MAX_LAYERS:,} (NASNetLarge, "
                         "the largest of keras.applications, has 1,040): refused before Keras builds it")
    if s.sequential > MAX_SEQUENTIAL:
        raise ValueError(f"declares a Sequential of {s.sequential:,} layers, more than {MAX_SEQUENTIAL:,} (Keras "
                         "rebuilds a Sequential at each layer it adds while loading it: 600 layers took 131 s): "
                         "refused before Keras builds it; save it as a functional model (keras.Model(inputs, "
                         "outputs))")
    if s.depth > MAX_DEPTH:
        raise ValueError(f"declares a graph {s.depth:,} layers deep, more than {MAX_DEPTH:,} (Keras walks a "
                         "model's graph recursively; EfficientNetV2L, the deepest of keras.applications, is 1,030): "
                         "refused before Keras builds it")
    if s.passes > MAX_PASSES:
        raise ValueError(f"lists its layers out of the order of its graph: Keras' loader would go over them "
                         f"{s.passes:,} times, more than {MAX_PASSES} (a model Keras saved takes one or two): "
                         "refused before Keras builds it")
    if s.no_shape:
        listed = ", ".join(f"{n!r} ({k})" for n, k in s.no_shape[:5])
        raise ValueError(f"has layers whose input shape its config does not say ({listed}: no build_config): Keras "
                         "writes one for every layer it built; save the model once built (keras.Input first)")
    cap = max_params()
    if s.params > cap:
        top = ", ".join(f"{n!r} ({k}): {p:,}" for n, k, p in s.biggest)
        raise ValueError(f"declares about {s.params:,} parameters ({top}), more than {cap:,} ({cap * 4 / 1e9:.1f} "
                         f"GB of float32 weights; the bound is {PARAMS_CAP:,}, or this machine's memory / 16 bytes "
                         "where fewer): refused before Keras builds it")
