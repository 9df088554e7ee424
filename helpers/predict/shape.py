"""What a Keras model's training step launches, read from the model alone (no device, no run): the inputs of the
GPU step-time model (``helpers.predict.gpu``) beside its FLOPs (``helpers.measure.flops_analytic``).

- ``layers``: the layers that compute (every layer but inputs; wrappers counted by what they wrap);
- ``launches``: a proxy of the kernels one training step launches: each computing layer once, a recurrent layer once
  per time step (its cell runs in a loop: ``timesteps`` x the cell; a bidirectional one twice);
- ``weights``: the trainable weight tensors (the optimiser updates each: an elementwise kernel or a few per tensor);
- ``input_bytes``: bytes of one input sample as fed (the host-to-device copy a step pays per sample).

    s = shape(model)      # {"layers": 23, "launches": 23, "weights": 10, "input_bytes": 3072}
"""

from __future__ import annotations

import math

FIELDS = ("layers", "launches", "weights", "input_bytes")


def _timesteps(layer) -> int:
    try:
        shp = layer.input.shape if not isinstance(layer.input, (list, tuple)) else layer.input[0].shape
        return int(shp[1]) if len(shp) >= 3 and shp[1] else 1
    except Exception:  # a layer without a single symbolic input: counted once
        return 1


def _launches(layer) -> int:
    import keras

    if isinstance(layer, keras.layers.Bidirectional):
        return 2 * _timesteps(layer)
    if isinstance(layer, keras.layers.RNN):
        return _timesteps(layer)
    return 1


def _computing(model):
    import keras

    for layer in model._flatten_layers(include_self=False, recursive=True):
        if isinstance(layer, keras.layers.InputLayer):
            continue
        if isinstance(layer, keras.Model):  # a nested model: its own layers are walked
            continue
        yield layer


def shape(model) -> dict:
    """The model's ``FIELDS`` (module docstring)."""
    import numpy as np

    layers, launches, seen = 0, 0, set()
    for layer in _computing(model):
        if id(layer) in seen:
            continue
        seen.add(id(layer))
        inner = getattr(layer, "forward_layer", None) or getattr(layer, "cell", None)
        if inner is not None:  # an RNN's cell, a wrapper's layers: one step of the loop, not layers of their own
            seen.update(id(s) for s in inner._flatten_layers(include_self=True, recursive=True))
            seen.update(id(s) for s in getattr(layer, "backward_layer", inner)._flatten_layers(include_self=True,
                                                                                                 recursive=True))
        layers += 1
        launches += _launches(layer)
    weights = len(model.trainable_weights)
    nbytes = 0
    for t in model.inputs:
        dims = [int(d) for d in t.shape[1:] if d is not None]
        nbytes += int(math.prod(dims)) * np.dtype(t.dtype).itemsize
    return {"layers": layers, "launches": launches, "weights": weights, "input_bytes": nbytes}
