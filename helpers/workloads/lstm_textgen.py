"""lstm_textgen: seed 002's lstm_text_generation.py (Max Woolf, 2017), a next-character LSTM on Nietzsche.

    get("lstm_textgen").load(params)       -> one-hot windows of maxlen 40 every 3 characters (bool)
    get("lstm_textgen").describe(model, p) -> which LSTM kernel the backend ran (``lstm.describe_lstm``)

The script of ``minimaxir/keras-cntk-benchmark`` ``v2/test_files`` (a copy of the Keras 2 example),
layer for layer: LSTM(128) -> Dense(57) -> softmax, RMSprop(0.01), batch 128. Data: the Nietzsche
text or synthetic Markov-chain text over 57 characters (``helpers.data.text_sets``). The
``lstm_impl`` knob (cuDNN or Keras' generic loop) and the kernel report are ``helpers.workloads.lstm``'s.
"""

from __future__ import annotations

import numpy as np

from helpers.data import loaders as _data
from helpers.data.text_sets import text_chars, textgen_data

from ..params import Param
from .lstm import _LSTM_KNOB, _lstm, describe_lstm
from .registry import Workload, register

SOURCE = "002_51261036f2f3f066.txt"
SCRIPTS = "minimaxir/keras-cntk-benchmark v2/test_files/"


def _textgen_loader(params: dict) -> _data.Dataset:
    """The source's vectorisation: windows of ``maxlen`` characters every ``step``, one-hot (bool)."""
    t = textgen_data(params)
    text, maxlen, step = t["text"], int(params["maxlen"]), int(params["step"])
    chars = text_chars(params)
    index = {c: i for i, c in enumerate(chars)}
    starts = np.arange(0, len(text) - maxlen, step)
    n_total = len(starts)
    n = n_total if params.get("n_train") is None else min(int(params["n_train"]), n_total)
    if n < n_total:  # a random subset of the windows, in text order
        starts = np.sort(np.random.default_rng(int(params["seed"])).choice(starts, n, replace=False))
    codes = np.fromiter((index[c] for c in text), dtype=np.int32, count=len(text))
    win = codes[starts[:, None] + np.arange(maxlen)[None, :]]
    x = np.zeros((n, maxlen, len(chars)), dtype=bool)
    np.put_along_axis(x, win[:, :, None], True, axis=2)
    y = np.zeros((n, len(chars)), dtype=bool)
    y[np.arange(n), codes[starts + maxlen]] = True
    n_val = int(params["n_val"] or 0)
    xv = yv = None
    if n_val:  # windows at random positions (the source has no validation)
        vs = np.random.default_rng(int(params["seed"]) + 1).integers(0, len(text) - maxlen, n_val)
        xv = np.zeros((n_val, maxlen, len(chars)), dtype=bool)
        np.put_along_axis(xv, codes[vs[:, None] + np.arange(maxlen)[None, :]][:, :, None], True, axis=2)
        yv = np.zeros((n_val, len(chars)), dtype=bool)
        yv[np.arange(n_val), codes[vs + maxlen]] = True
    extra = {"dataset": "Nietzsche", "corpus_chars": len(text), "n_chars": len(chars), "maxlen": maxlen,
             "step": step, "sequences_total": int(n_total), "one_hot_dtype": "bool"}
    return _data.Dataset(x, y, xv, yv, t["source"], t["detail"], len(chars), extra)

def _textgen(params: dict):
    """lstm_text_generation.py: LSTM(128) on (maxlen, chars) one-hot windows -> Dense(chars) -> softmax."""
    import keras
    from keras import layers

    n_chars = len(text_chars(params))
    return keras.Sequential([
        keras.Input((int(params["maxlen"]), n_chars)),
        _lstm(128, params, name="lstm"),
        layers.Dense(n_chars, name="dense"),
        layers.Activation("softmax", dtype="float32", name="softmax"),
    ], name="lstm_textgen")


def _rmsprop_cce(params: dict) -> dict:
    import keras

    # RMSprop(lr=0.01), categorical_crossentropy, no metrics (as the source: only the loss is logged)
    return {"optimizer": keras.optimizers.RMSprop(learning_rate=0.01), "loss": "categorical_crossentropy"}


# ---------------------------------------------------------------- registry

register(Workload(
    name="lstm_textgen",
    notes={
        "batch_size": "windows per step (the source: 128)",
        "epochs": "(the source: 10)",
        "n_train": "training windows, a random subset (None: all 200,285, as in the source)",
        "n_val": "validation windows evaluated each epoch (the source: none)",
        "data_source": "auto: real Nietzsche if cached or reachable, else synthetic; or real / synthetic",
        "maxlen": "characters per window (the source: 40)",
        "step": "characters between window starts (the source: 3)",
        "seed": "(data subset, synthetic data, weights)",
    },
    source=SOURCE,
    summary="Keras' lstm_text_generation example on Nietzsche (LSTM(128), 57 characters, maxlen 40, step 3, "
            "200,285 windows, RMSprop(0.01), batch 128, 10 epochs): TensorFlow K80 ~25 s/epoch (CuDNNLSTM), "
            "P100 ~20 s, 32 vCPUs ~74 s, 16 vCPUs ~84 s; loss 1.95 -> 1.39 (v2 logs)",
    defaults={"batch_size": 128, "epochs": 3, "n_train": 5000, "n_val": 0, "maxlen": 40, "step": 3,
              "lstm_impl": "auto"},
    build=_textgen,
    compile_args=_rmsprop_cce,
    load=_textgen_loader,
    expected_params=102585,  # 4*(128*(57+128)+128) + 128*57+57, with Nietzsche's 57 characters
    extra_params={
        "maxlen": Param("maxlen", int, "characters per window (source: 40)", minimum=1),
        "step": Param("step", int, "characters between window starts (source: 3)", minimum=1),
        "lstm_impl": _LSTM_KNOB,
    },
    describe=describe_lstm,
))
