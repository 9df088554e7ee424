"""FLOPs of one training step per sample, counted analytically by walking a built model's layers.

    c = analytic(model)                       # built keras.Model (compiled: its optimiser is counted)
    c.forward, c.model()                      # FLOPs per sample: forward pass; forward + backward (what MFU counts)
    c.update_per_step, c.train(batch_size)    # the optimiser's FLOPs per step; the whole step per sample

XLA's own count of the compiled step: ``helpers.measure.flops_xla``; the committed counts (data/flops.csv) the
report reads: ``helpers.measure.flops_table``; the device's peak and MFU: ``helpers.measure.peaks``.

Convention (the analytical count, counted once per model by walking its built layers):

- 2 FLOPs per multiply-add (a Dense of ``n`` inputs and ``m`` units: ``2 n m`` FLOPs per position).
- backward = 2 x forward (one product for the gradient of the inputs, one for that of the weights), so a
  training step is ``3 x forward`` per sample, plus the optimiser's update once per step, spread over the
  batch: ``UPDATE_FLOPS`` per trainable parameter (e.g. SGD with momentum 4, Adam 12), divided by the
  batch size. This is "model FLOPs" (the MFU of the PaLM paper): what the model needs, not what an
  implementation happens to execute (no recomputation, no augmentation); a 'same' convolution counts its full
  kernel at every output position, as published figures do (Keras' ResNet50, a v1: 3.86 G multiply-adds in
  its convolutions and classifier at 224 x 224, 3.91 G with the elementwise work; v1.5's 4.1 G is the one
  usually quoted). MFU counts the model's FLOPs, forward and backward (``model()``); the optimiser's update is
  shown apart, per step (``update_per_step``): divided by the batch it would make MFU fall as the batch grows
  while throughput rises (fasttext_imdb's 66M-parameter embedding table under Adam: 0.132% at batch 32, 0.095% at
  256, 5.6x faster).
- Counted: Dense (and bias, activation), Conv1D/2D/3D, depthwise, separable and transposed convolutions,
  Embedding (a gather: 0 FLOPs forward; its dense gradient is counted by the update term), LSTM / GRU /
  SimpleRNN per time step (both directions of a Bidirectional), BatchNormalization and LayerNormalization
  (``NORM_FLOPS`` per element), pooling (one FLOP per window element), activations (``ACT_FLOPS`` per
  element), Dropout (2 per element: compare, scale), merges (Add, ...: one per element per extra input),
  Rescaling / Normalization (2 per element). Data movement (Flatten, Reshape, padding, cropping,
  concatenation, InputLayer) is 0. Data augmentation layers (Random*, the suite's RandomShift) are 0 with a
  note: they are not model FLOPs. Any other layer is counted as 0 and named in ``notes``.

A point counts its model at the end (``helpers.point.record_figures.limit_figures``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

FLOPS_PER_MAC = 2
BACKWARD_FACTOR = 2  # backward = 2 x forward
NORM_FLOPS = 8  # batch/layer norm in training: mean, variance (3), normalise (2), scale and shift (2) per element
DROPOUT_FLOPS = 2
ACT_FLOPS = {"linear": 0, "softmax": 5, "log_softmax": 5, "sigmoid": 4, "tanh": 4, "gelu": 8, "swish": 5,
             "silu": 5, "elu": 3, "selu": 4, "softplus": 3}  # anything else (relu, ...): 1
# FLOPs per trainable parameter of one update, by optimiser class (lower case); others: DEFAULT_UPDATE
UPDATE_FLOPS = {"sgd": 2, "sgd+momentum": 4, "rmsprop": 8, "adam": 12, "adamw": 14, "nadam": 14, "adamax": 10,
                "adagrad": 6, "adadelta": 12, "lion": 8, "ftrl": 14}
DEFAULT_UPDATE = 10
DATA_MOVEMENT = {"InputLayer", "Flatten", "Reshape", "Permute", "RepeatVector", "ZeroPadding1D", "ZeroPadding2D",
                 "ZeroPadding3D", "Cropping1D", "Cropping2D", "Cropping3D", "Concatenate", "Identity",
                 "UpSampling1D", "UpSampling2D", "UpSampling3D", "SpatialDropout1D", "ActivityRegularization"}
AUGMENTATION_PREFIX = ("Random",)  # RandomFlip, RandomRotation, the suite's RandomShift, ...


@dataclass
class Count:
    """The analytical count of one model (FLOPs per sample)."""

    forward: float = 0.0  # forward pass, per sample
    input_grad: float = 0.0  # the first weighted layer's input gradient: in the convention, not executed
    trainable_params: int = 0
    update_per_param: float = 0.0  # optimiser FLOPs per trainable parameter per step
    optimizer: str = ""
    layers: list = field(default_factory=list)  # (layer name, class, forward FLOPs per sample)
    notes: list = field(default_factory=list)

    @property
    def update_per_step(self) -> float:
        return self.update_per_param * self.trainable_params

    def model(self) -> float:
        """Model FLOPs per sample, what MFU counts: forward + backward (3 x forward); the optimiser's update apart."""
        return (1 + BACKWARD_FACTOR) * self.forward

    def train(self, batch_size: int) -> float:
        """FLOPs per sample of one training step by the convention: 3 x forward + update / batch."""
        return (1 + BACKWARD_FACTOR) * self.forward + self.update_per_step / max(int(batch_size), 1)

    def exact(self, batch_size: int) -> float:
        """The convention less the input gradient no framework computes: what XLA should count."""
        return self.train(batch_size) - self.input_grad


# ------------------------------------------------------------------ the analytical count


def _shape(t) -> tuple | None:
    try:
        return tuple(t.shape)
    except AttributeError:
        return None


def layer_io(layer):
    """(input shape, output shape) of a layer called once in a functional graph; None where unknown."""
    try:
        node = layer._inbound_nodes[0]
        ins = [_shape(t) for t in node.input_tensors]
        outs = [_shape(t) for t in node.output_tensors]
        return (ins[0] if len(ins) == 1 else ins), (outs[0] if len(outs) == 1 else outs)
    except (AttributeError, IndexError):
        return None, None


def shape_elems(shape) -> int:
    if not shape:
        return 0
    if isinstance(shape, list):
        return sum(shape_elems(s) for s in shape)
    return math.prod(int(d) for d in shape[1:] if d is not None)


def _act(activation, n: int) -> float:
    name = getattr(activation, "__name__", str(activation))
    return ACT_FLOPS.get(name, 1) * n


def _rnn_step(cell, kind: str) -> float:
    """FLOPs of one time step of a recurrent cell (matmuls, bias, gates)."""
    d, u = int(cell.kernel.shape[0]), int(cell.units)
    gates = {"LSTM": 4, "GRU": 3, "SimpleRNN": 1}[kind]
    macs = gates * u * (d + u)
    elementwise = {"LSTM": 4 * u + 3 * 4 * u + 5 * u, "GRU": 3 * u + 3 * 4 * u + 5 * u, "SimpleRNN": 2 * u}[kind]
    return FLOPS_PER_MAC * macs + elementwise


def _rnn(layer, ins) -> float:
    kind = type(layer).__name__
    if kind not in ("LSTM", "GRU", "SimpleRNN") or ins is None or len(ins) < 3:
        return None
    return int(ins[1]) * _rnn_step(layer.cell, kind)


def _input_projection(layer, f: float) -> float:
    """The part of ``layer``'s forward FLOPs that multiplies its input (all of it, except for recurrent
    layers: their input kernel's products, not the recurrence)."""
    subs = (layer.forward_layer, layer.backward_layer) if type(layer).__name__ == "Bidirectional" else (layer,)
    if not all(hasattr(s, "cell") for s in subs):
        return f
    ins, _ = layer_io(layer)
    try:
        return float(sum(FLOPS_PER_MAC * int(ins[1]) * math.prod(int(d) for d in s.cell.kernel.shape)
                         for s in subs))
    except (TypeError, IndexError, AttributeError):
        return f


def _attention(layer, ins, notes: list) -> float:
    """Multi-head attention of a query of T positions over S: the four projections, the scores, the softmax
    (``ACT_FLOPS``) and the weighted sum, per sample."""
    try:
        q, v = (ins[0], ins[1]) if isinstance(ins, list) else (ins, ins)
        t, d, s = int(q[1]), int(q[-1]), int(v[1])
        h, k = int(layer.num_heads), int(layer.key_dim)
        vd = int(layer.value_dim or k)
    except (TypeError, IndexError, AttributeError, ValueError):
        notes.append(f"{layer.name} (MultiHeadAttention): shapes unknown: 0")
        return 0.0
    macs = t * d * h * k + s * d * h * k + s * d * h * vd + t * s * h * k + t * s * h * vd + t * h * vd * d
    return float(FLOPS_PER_MAC * macs + ACT_FLOPS["softmax"] * h * t * s)


def layer_flops(layer, notes: list) -> float:  # noqa: C901 - one case per layer kind
    import keras

    kind = type(layer).__name__
    ins, outs = layer_io(layer)
    out_n = shape_elems(outs)
    if isinstance(layer, keras.Model):
        return None  # nested: walked by the caller
    if kind in DATA_MOVEMENT:
        return 0.0
    if kind.startswith(AUGMENTATION_PREFIX):
        notes.append(f"{layer.name} ({kind}): data augmentation, not model FLOPs: 0")
        return 0.0
    if kind == "Bidirectional":
        f = [_rnn(sub, ins) for sub in (layer.forward_layer, layer.backward_layer)]
        if None in f:
            notes.append(f"{layer.name} (Bidirectional of {type(layer.forward_layer).__name__}): not counted: 0")
            return 0.0
        return float(sum(f))
    if kind in ("LSTM", "GRU", "SimpleRNN"):
        f = _rnn(layer, ins)
        return float(f) if f is not None else 0.0
    if kind == "Embedding":
        return 0.0  # a gather; its (dense) gradient is in the update term
    if kind == "MultiHeadAttention":
        return _attention(layer, ins, notes)
    if outs is None:
        notes.append(f"{layer.name} ({kind}): shapes unknown (layer not in a functional graph): 0")
        return 0.0
    act = _act(layer.activation, out_n) if hasattr(layer, "activation") else 0.0
    if kind in ("Dense", "EinsumDense") and hasattr(layer, "kernel"):
        k = layer.kernel.shape
        positions = shape_elems(outs) // int(k[-1]) if kind == "Dense" else 1
        macs = positions * math.prod(int(d) for d in k)
        bias = out_n if getattr(layer, "use_bias", False) else 0
        return float(FLOPS_PER_MAC * macs + bias + act)
    if kind in ("Conv1D", "Conv2D", "Conv3D", "DepthwiseConv1D", "DepthwiseConv2D", "Conv1DTranspose",
                "Conv2DTranspose", "Conv3DTranspose", "SeparableConv1D", "SeparableConv2D"):
        first = getattr(layer, "data_format", "channels_last") == "channels_first"
        spatial = (lambda s: s[2:]) if first else (lambda s: s[1:-1])
        where = ins if "Transpose" in kind else outs  # a transposed conv: one kernel product per input position
        pos = math.prod(int(d) for d in spatial(where))
        if kind.startswith("Separable"):
            macs = pos * (math.prod(int(d) for d in layer.depthwise_kernel.shape)
                          + math.prod(int(d) for d in layer.pointwise_kernel.shape))
        else:
            kernel = layer.kernel.shape
            macs = pos * math.prod(int(d) for d in kernel)
        bias = out_n if getattr(layer, "use_bias", False) else 0
        return float(FLOPS_PER_MAC * macs + bias + act)
    if kind in ("BatchNormalization", "LayerNormalization", "GroupNormalization", "UnitNormalization"):
        return float(NORM_FLOPS * out_n)
    if kind in ("MaxPooling1D", "MaxPooling2D", "MaxPooling3D", "AveragePooling1D", "AveragePooling2D",
                "AveragePooling3D"):
        return float(out_n * math.prod(int(d) for d in layer.pool_size))
    if kind.startswith(("GlobalAveragePooling", "GlobalMaxPooling")):
        return float(shape_elems(ins))
    if kind in ("Activation", "ReLU", "Softmax", "LeakyReLU", "PReLU", "ELU"):
        return float(act if hasattr(layer, "activation") else ACT_FLOPS.get(kind.lower(), 1) * out_n)
    if kind in ("Dropout", "GaussianNoise", "GaussianDropout", "AlphaDropout"):
        return float(DROPOUT_FLOPS * out_n)
    if kind in ("Add", "Subtract", "Multiply", "Average", "Maximum", "Minimum"):
        n_in = len(ins) if isinstance(ins, list) else 2
        return float((n_in - 1) * out_n)
    if kind in ("Rescaling", "Normalization"):
        return float(2 * out_n)
    notes.append(f"{layer.name} ({kind}): no rule for this layer: counted as 0")
    return 0.0


def _update_rate(optimizer) -> tuple[str, float]:
    if optimizer is None:
        return "", 0.0
    opt = getattr(optimizer, "inner_optimizer", optimizer)  # LossScaleOptimizer (mixed_float16)
    name = type(opt).__name__.lower()
    if name == "sgd" and float(getattr(opt, "momentum", 0) or 0) > 0:
        name = "sgd+momentum"
    return name, float(UPDATE_FLOPS.get(name, DEFAULT_UPDATE))


def analytic(model, optimizer=None) -> Count:
    """Walk the built ``model`` layer by layer (nested models included) and count its FLOPs per sample.
    ``optimizer``: the one to count the update of (default: the compiled model's, none if not compiled)."""
    c = Count()
    c.trainable_params = int(sum(math.prod(int(d) for d in v.shape) for v in model.trainable_weights))
    c.optimizer, c.update_per_param = _update_rate(optimizer if optimizer is not None
                                                   else getattr(model, "optimizer", None))
    if c.optimizer and c.optimizer not in UPDATE_FLOPS:
        c.notes.append(f"optimiser {c.optimizer}: no rule, {DEFAULT_UPDATE} FLOPs per parameter per update")
    weighted_seen = False

    def walk(m):
        nonlocal weighted_seen
        for layer in m.layers:
            f = layer_flops(layer, c.notes)
            if f is None:
                walk(layer)
                continue
            c.forward += f
            c.layers.append((layer.name, type(layer).__name__, f))
            if not weighted_seen and layer.trainable_weights:
                weighted_seen = True
                # the first weighted layer's input gradient (1 x its forward; of a recurrent layer, its input
                # projection only) is not computed by anyone
                c.input_grad = (BACKWARD_FACTOR - 1) * _input_projection(layer, f)

    walk(model)
    return c
