"""The LSTM layer and its kernel report, shared by bilstm_imdb and lstm_textgen (registers no workload).

    _lstm(units, params, name="lstm")  -> keras.layers.LSTM with use_cudnn from ``lstm_impl``
    describe_lstm(model, params)        -> the record's facts on the LSTM kernel the backend ran
    _LSTM_KNOB                          -> the ``lstm_impl`` parameter (helpers.params.Param)

The LSTM workloads take ``lstm_impl`` (seed 002 found the LSTM kernel decisive: CuDNNLSTM made
TensorFlow on a K80 7x faster): ``auto`` = ``keras.layers.LSTM(use_cudnn="auto")`` (Keras 3's
default: the backend's fused cuDNN kernel when it sees a GPU, as the source's CuDNNLSTM on GPU),
``generic`` = ``use_cudnn=False`` (Keras' step-by-step RNN loop everywhere, as the July 2017 post's
plain LSTM on GPU), ``cudnn`` = ``use_cudnn=True`` (cuDNN or a failed point: GPU only). After
training, ``describe`` writes into the record which kernel the backend ran (``workload_info``). On
JAX with a bfloat16 compute dtype ``auto`` takes the generic loop: jaxlib's cuDNN RNN has no bfloat16
kernel (``cudnn_dtype_blocker``).

Keras is imported inside the functions only.
"""

from __future__ import annotations

from ..params import Param

LSTM_IMPLS = ("auto", "generic", "cudnn")
_USE_CUDNN = {"auto": "auto", "generic": False, "cudnn": True}


def _lstm(units: int, params: dict, **kwargs):
    """``keras.layers.LSTM`` with ``use_cudnn`` from the ``lstm_impl`` knob (checked before training)."""
    import keras
    from keras.src import backend as kb

    impl = params["lstm_impl"]
    if impl == "cudnn" and not kb.cudnn_ok(keras.activations.tanh, keras.activations.sigmoid, False, True):
        raise ValueError(f"lstm_impl='cudnn' needs the cuDNN kernel, which backend '{keras.backend.backend()}' "
                         "cannot use here (no GPU visible): use lstm_impl='auto' or 'generic' on the CPU")
    reason = cudnn_dtype_blocker()
    if reason and impl == "cudnn":
        raise ValueError(f"lstm_impl='cudnn' cannot run here: {reason}; use lstm_impl='auto' or 'generic', "
                         "or precision float32")
    use_cudnn = False if reason else _USE_CUDNN[impl]
    return keras.layers.LSTM(units, use_cudnn=use_cudnn, **kwargs)


def cudnn_dtype_blocker() -> str | None:
    """Why the fused cuDNN LSTM cannot take the current dtype policy, or None.

    JAX: Keras' ``backend.lstm`` calls ``jax.experimental.rnn.lstm``, whose cuDNN lowering (jaxlib's
    ``gpu_rnn``) knows float32 and float16 only. With a bfloat16 compute dtype it fails when the train
    step is compiled ("ValueError: Unknown output type bfloat16", seen on an H100 with jax 0.11.2),
    after Keras' own fallback check has passed, so the whole fit fails. ``lstm_impl='auto'`` then takes
    Keras' generic loop instead (recorded in ``workload_info``).
    """
    import keras

    if keras.backend.backend() == "jax" and keras.config.dtype_policy().compute_dtype == "bfloat16":
        return "jaxlib's cuDNN RNN has no bfloat16 kernel (mixed_bfloat16 on JAX)"
    return None


# ---------------------------------------------------------------- which LSTM kernel ran

_GENERIC_LOOP = {"tensorflow": "Keras RNN loop (tf.while_loop)", "jax": "Keras RNN loop (jax.lax.scan)",
                 "torch": "Keras RNN loop (Python loop over time steps)"}
_FUSED = {"tensorflow": "cuDNN (tf CudnnRNNV3)", "jax": "cuDNN (jax.experimental.rnn.lstm)",
          "torch": "cuDNN (torch._VF.lstm)"}


def _lstm_layers(model) -> list:
    import keras

    out = []
    for layer in model.layers:
        if isinstance(layer, keras.layers.Bidirectional):
            out += [layer.forward_layer, layer.backward_layer]
        elif isinstance(layer, keras.layers.LSTM):
            out.append(layer)
    return out


def _backend_device(backend: str) -> str:
    try:
        if backend == "tensorflow":
            import tensorflow as tf

            gpus = tf.config.list_logical_devices("GPU")
            return gpus[0].name if gpus else "CPU:0"
        if backend == "jax":
            import jax

            return f"{jax.default_backend()}: {jax.devices()[0]}"
        from keras.src.backend.torch.core import get_device

        return str(get_device())
    except Exception as exc:  # noqa: BLE001 - a fact for the record, never a failure
        return f"unknown ({type(exc).__name__})"


def _probe_fused(layer, backend: str) -> bool | None:
    """Whether the backend's fused ``backend.lstm`` accepts this layer here (TF/JAX raise when not)."""
    from keras import ops
    from keras.src import backend as kb

    if backend == "torch":
        return None  # torch's backend.lstm never refuses: it falls back inside (see describe)
    try:
        x = ops.zeros((2, 3, int(layer.cell.kernel.shape[0])))
        h = ops.zeros((2, layer.cell.units))
        kb.lstm(x, h, h, None, kernel=layer.cell.kernel, recurrent_kernel=layer.cell.recurrent_kernel,
                bias=layer.cell.bias, activation=layer.cell.activation,
                recurrent_activation=layer.cell.recurrent_activation, go_backwards=layer.go_backwards)
        return True
    except NotImplementedError:
        return False
    except Exception:  # noqa: BLE001
        return None


def describe_lstm(model, params: dict) -> dict:
    """Which LSTM kernel the backend ran, by Keras 3's own dispatch rules (keras/src/layers/rnn/lstm.py).

    ``LSTM.inner_loop`` calls the backend's fused ``backend.lstm`` unless ``use_cudnn=False``, there is
    recurrent dropout or a mask; TF and JAX raise NotImplementedError there without a GPU (or with
    arguments cuDNN cannot take: activation not tanh, recurrent activation not sigmoid, unroll, no
    bias) and Keras falls back to its generic RNN loop. Torch's ``backend.lstm`` runs cuDNN on CUDA
    and otherwise its own loop (input projections precomputed), so on torch the knob picks between
    two generic loops on the CPU.
    """
    import keras
    from keras.src import backend as kb

    backend = keras.backend.backend()
    layers_ = _lstm_layers(model)
    if not layers_:
        return {}
    layer = layers_[0]
    cell = layer.cell
    args_ok = (cell.activation is keras.activations.tanh and cell.recurrent_activation is keras.activations.sigmoid
               and not layer.unroll and cell.use_bias and not cell.recurrent_dropout)
    use_cudnn = layer.use_cudnn
    cudnn_possible = bool(kb.cudnn_ok(cell.activation, cell.recurrent_activation, layer.unroll, cell.use_bias)
                          and args_ok and use_cudnn in ("auto", True))
    device = _backend_device(backend)
    on_gpu = any(s in device.lower() for s in ("gpu", "cuda"))
    probe = _probe_fused(layer, backend) if use_cudnn in ("auto", True) and args_ok else False
    if use_cudnn is False or not args_ok:
        kernel = _GENERIC_LOOP[backend]
    elif backend == "torch":  # torch.compile (jit_compile) also takes the loop: cuDNN is skipped when compiling
        fused = cudnn_possible and on_gpu and not getattr(model, "jit_compile", False)
        kernel = _FUSED[backend] if fused else "Keras torch backend.lstm loop (no cuDNN)"
    elif probe:
        kernel = _FUSED[backend]
    else:
        kernel = _GENERIC_LOOP[backend]
    if not kernel.startswith("cuDNN"):
        kernel = f"generic ({'GPU' if on_gpu else 'CPU'}): {kernel}"
    return {
        "lstm_impl": params["lstm_impl"],
        "lstm_use_cudnn": use_cudnn,
        "cudnn_dtype_blocker": cudnn_dtype_blocker(),  # why 'auto' took the generic loop (None: not dtype)
        "lstm_kernel": kernel,
        "cudnn_args_ok": bool(args_ok),
        "cudnn_possible": cudnn_possible,
        "fused_probe": probe,  # backend.lstm accepted a tiny input (None: not asked)
        "backend_device": device,
        "lstm_layers": len(layers_),
        "model_jit_compile": getattr(model, "jit_compile", None),
        "basis": "keras LSTM dispatch (use_cudnn, backend.cudnn_ok) + a probe of backend.lstm",
    }


_LSTM_KNOB = Param("lstm_impl", str, "LSTM kernel: auto (cuDNN on GPU), generic (no cuDNN), cudnn (GPU only)",
                   choices=LSTM_IMPLS,
        note="LSTM kernel: auto (cuDNN on a GPU), generic (never cuDNN) or cudnn (GPU only)")
