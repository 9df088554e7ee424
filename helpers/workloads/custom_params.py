"""custom (its size, per layer): the parameters a built-in Keras layer's config declares, from the layer's config and
its input shape (``build_config``), read from the JSON alone; and a Sequential's shapes, layer by layer. Used by
``custom_size`` (the bounds: its docstring says why and which); imports nothing of the suite.

    n, known = layer_params(layer_config, input_shape_or_None, push)   # push(config, shape): a wrapped layer
    shape = next_shape("Dense", {"units": 8}, [None, 12])                # [None, 8]
"""

from __future__ import annotations

import math
import re

BIG = 10 ** 30  # every product is clamped here: a config of huge numbers stays cheap to estimate


def _int(v) -> int | None:
    """A config number as Keras would take it (an int, a whole float, a bool, a numeric string), clamped; else None."""
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, int):
        return max(0, min(v, BIG))
    if isinstance(v, float) and math.isfinite(v):
        return max(0, min(int(v), BIG))
    if isinstance(v, str) and re.fullmatch(r"\s*\d{1,40}\s*", v):
        return min(int(v), BIG)
    return None


def _prod(values) -> int:
    out = 1
    for v in values:
        out = min(out * (_int(v) if _int(v) is not None else 1), BIG)
    return out


def as_shape(v) -> list | None:
    """A shape as Keras writes one (a list of ints and nulls, batch first), else None."""
    if isinstance(v, (list, tuple)) and v and all(d is None or _int(d) is not None for d in v):
        return [None if d is None else _int(d) for d in v]
    return None


def input_shapes(node: dict) -> list[list]:
    """The input shapes of a layer's ``build_config``: ``input_shape`` (one shape, or a list of them) or
    ``shapes_dict`` (its values, in order)."""
    bc = node.get("build_config")
    if not isinstance(bc, dict):
        return []
    if isinstance(bc.get("shapes_dict"), dict):
        return [s for s in map(as_shape, bc["shapes_dict"].values()) if s]
    one = as_shape(bc.get("input_shape"))
    if one:
        return [one]
    many = bc.get("input_shape")
    if isinstance(many, (list, tuple)):
        return [s for s in map(as_shape, many) if s]
    if isinstance(many, dict):
        return [s for s in map(as_shape, many.values()) if s]
    return []


def _last(s) -> int:
    return (s[-1] or 1) if s else 1


def _axis_dims(s, axis) -> int:
    axes = axis if isinstance(axis, (list, tuple)) else [axis if axis is not None else -1]
    out = 1
    for a in axes:
        a = _int(a) if not (isinstance(a, int) and a < 0) else a
        if isinstance(a, int) and -len(s) <= a < len(s):
            out = min(out * (s[a] or 1), BIG)
    return out


def _kernel(c, rank: int) -> int:
    k = c.get("kernel_size")
    ks = k if isinstance(k, (list, tuple)) else [k] * rank
    return _prod(ks)


def _channels(c, s) -> int:
    return (s[1] or 1) if c.get("data_format") == "channels_first" and len(s) > 1 else _last(s)


def _cell(kind: str, c: dict, d_in: int) -> int:
    u = _int(c.get("units")) or 0
    bias = 1 if c.get("use_bias", True) else 0
    if kind.startswith("SimpleRNN"):
        return u * (d_in + u + bias)
    if kind.startswith("GRU"):
        return 3 * u * (d_in + u) + 3 * u * bias * (2 if c.get("reset_after", True) else 1)
    return 4 * u * (d_in + u + bias)  # LSTM


def _einsum(c: dict, s: list) -> int:
    eq = c.get("equation")
    m = re.fullmatch(r"\s*([\w.]*)\s*,\s*([\w.]*)\s*->\s*([\w.]*)\s*", eq) if isinstance(eq, str) else None
    if not m:
        return 0
    spec_in, spec_k, spec_out = m.groups()
    sizes: dict = {}
    ins = spec_in.replace("...", "")
    dims = s[len(s) - len(ins):] if spec_in.startswith("...") else s[:len(ins)]
    for ch, d in zip(ins, dims):
        sizes.setdefault(ch, d or 1)
    out_shape = c.get("output_shape")
    out_shape = out_shape if isinstance(out_shape, (list, tuple)) else [out_shape]
    outs = spec_out.replace("...", "")
    for ch, d in zip(outs[max(0, len(outs) - len(out_shape)):], out_shape):
        sizes.setdefault(ch, _int(d) or 1)
    bias = c.get("bias_axes")
    n = _prod(sizes.get(ch, 1) for ch in spec_k.replace("...", ""))
    return n + (_prod(sizes.get(ch, 1) for ch in bias) if isinstance(bias, str) and bias else 0)


# the kinds whose weights depend on their input's shape (so on the build_config Keras builds them from)
_SHAPED = re.compile(r"(Dense|EinsumDense|(Conv|Convolution)[123]D(Transpose)?|DepthwiseConv[12]D|"
                     r"(SeparableConv|SeparableConvolution)[12]D|ConvLSTM[123]D|(SimpleRNN|GRU|LSTM)(Cell)?|"
                     r"(Batch|Layer|RMS|Group|)Normalization|PReLU|AdditiveAttention|MultiHeadAttention|"
                     r"GroupQueryAttention|Bidirectional|TimeDistributed|SpectralNormalization|RNN)\Z")
_WRAPPERS = ("Bidirectional", "TimeDistributed", "SpectralNormalization", "RNN")
_NORMS = {"BatchNormalization": 4, "LayerNormalization": 2, "RMSNormalization": 1, "GroupNormalization": 2,
          "Normalization": 2}


def _conv(kind: str, c: dict, s: list) -> int:
    rank = int(re.search(r"([123])D", kind).group(1))
    k, cin = _kernel(c, rank), _channels(c, s)
    f = _int(c.get("filters")) or 0
    bias = f if c.get("use_bias", True) else 0
    if kind.startswith("DepthwiseConv"):
        dm = _int(c.get("depth_multiplier")) or 1
        return k * cin * dm + (cin * dm if c.get("use_bias", True) else 0)
    if kind.startswith("Separable"):
        dm = _int(c.get("depth_multiplier")) or 1
        return k * cin * dm + cin * dm * f + bias
    if kind.startswith("ConvLSTM"):
        return 4 * k * (cin + f) * f + 4 * f
    groups = _int(c.get("groups")) or 1
    return k * (cin // max(1, groups) if "Transpose" not in kind else cin) * f + bias


def _attention(kind: str, c: dict, shapes: list) -> int:
    q = shapes[0]
    v = shapes[1] if len(shapes) > 1 else q
    k = shapes[2] if len(shapes) > 2 and shapes[2] else v
    qd, vd, kd = _last(q), _last(v), _last(k)
    if kind == "GroupQueryAttention":
        hq, hkv, hd = (_int(c.get(n)) or 0 for n in ("num_query_heads", "num_key_value_heads", "head_dim"))
        return qd * hq * hd + (kd + vd) * hkv * hd + hq * hd * qd + 2 * hq * hd + 2 * hkv * hd + qd
    h, key_dim = _int(c.get("num_heads")) or 0, _int(c.get("key_dim")) or 0
    value_dim = _int(c.get("value_dim")) or key_dim
    out = c.get("output_shape")
    od = _prod(out if isinstance(out, (list, tuple)) else [out]) if out else qd
    return h * key_dim * (qd + kd + 2) + h * value_dim * (vd + 1) + h * value_dim * od + od


def layer_params(node: dict, shape: list | None, push) -> tuple[int | None, bool]:
    """(the layer's estimated parameters, whether its kind is one the estimate knows); ``None`` where it needs an input
    shape the config does not give. Wrapped layers are handed to ``push(config, their input shape)``."""
    kind, c = str(node.get("class_name")), node.get("config")
    shapes = input_shapes(node) or ([shape] if shape else [])
    if kind in ("Embedding", "ReversibleEmbedding"):
        n = (_int(c.get("input_dim")) or 0) * (_int(c.get("output_dim")) or 0)
        return (n if kind == "Embedding" or c.get("tie_weights", True) else 2 * n), True
    if not _SHAPED.match(kind):
        return 0, False
    if not shapes:
        return None, True
    s = shapes[0]
    if kind in _WRAPPERS:
        inner = [s[0], *s[2:]] if kind == "TimeDistributed" and len(s) > 2 else s
        wrapped = [c[k] for k in ("layer", "backward_layer", "cell") if isinstance(c.get(k), dict)]
        if kind == "Bidirectional" and not isinstance(c.get("backward_layer"), dict):
            wrapped *= 2  # the backward layer: a copy of the forward one
        for w in wrapped:
            cells = (w.get("config") or {}).get("cells") if isinstance(w.get("config"), dict) else None
            if isinstance(cells, list):  # StackedRNNCells: each cell on the previous one's units
                d = _last(inner)
                for cell in cells:
                    if isinstance(cell, dict) and isinstance(cell.get("config"), dict):
                        push(cell, [None, d])
                        d = _int(cell["config"].get("units")) or d
            else:
                push(w, inner)
        return 0, True
    if re.match(r"(SimpleRNN|GRU|LSTM)(Cell)?\Z", kind):
        return _cell(kind, c, _last(s)), True
    if re.search(r"[123]D", kind) and ("Conv" in kind):
        return _conv(kind, c, s), True
    if kind in ("MultiHeadAttention", "GroupQueryAttention"):
        return _attention(kind, c, shapes), True
    if kind in _NORMS:
        return _NORMS[kind] * _axis_dims(s, c.get("axis", -1)) + (kind == "Normalization"), True
    if kind == "Dense":
        units = _int(c.get("units")) or 0
        return _last(s) * units + (units if c.get("use_bias", True) else 0), True
    if kind == "EinsumDense":
        return _einsum(c, s), True
    if kind == "PReLU":
        return _prod(d or 1 for d in s[1:]), True
    return _last(s), True  # AdditiveAttention


# layers whose output has their input's shape
_SAME = re.compile(r"(Dropout|SpatialDropout[123]D|GaussianNoise|GaussianDropout|AlphaDropout|Activation|ReLU|"
                   r"LeakyReLU|PReLU|ELU|Softmax|(Batch|Layer|RMS|Group|Unit|)Normalization|Rescaling|Masking|Identity|"
                   r"ActivityRegularization)\Z")


def next_shape(kind: str, c: dict, s: list | None) -> list | None:
    """The output shape of a layer of a Sequential from its input's ``s`` (None: not known from the config)."""
    if s is None:
        return None
    if _SAME.match(kind):
        return s
    if kind == "Dense":
        return [*s[:-1], _int(c.get("units"))]
    if kind == "Embedding":
        return [*s, _int(c.get("output_dim"))]
    if kind == "Flatten":
        return [s[0], _prod(s[1:])] if all(d is not None for d in s[1:]) else None
    if kind in ("SimpleRNN", "GRU", "LSTM"):
        units = _int(c.get("units"))
        return [s[0], s[1], units] if c.get("return_sequences") and len(s) > 2 else [s[0], units]
    if kind.startswith("Global") and "Pooling" in kind:
        return [s[0], _channels(c, s)]
    return None
