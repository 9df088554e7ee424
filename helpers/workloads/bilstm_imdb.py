"""bilstm_imdb: seed 002's imdb_bidirectional_lstm.py (Max Woolf, 2017), a bidirectional LSTM on IMDb.

    get("bilstm_imdb").build(params)      -> Embedding(20000, 128) + Bidirectional(LSTM(64)), maxlen 100
    get("bilstm_imdb").describe(model, p) -> which LSTM kernel the backend ran (``lstm.describe_lstm``)

The script of ``minimaxir/keras-cntk-benchmark`` ``v2/test_files`` (a copy of the Keras 2 example),
layer for layer, with its optimiser, loss, batch size and preprocessing. Data: IMDb or synthetic
reviews of its shapes (``helpers.data.text_sets``). The ``lstm_impl`` knob (cuDNN or Keras' generic
loop) and the kernel report are ``helpers.workloads.lstm``'s.
"""

from __future__ import annotations

import numpy as np

from helpers.data import loaders as _data
from helpers.data.text_sets import imdb_data, imdb_val, pad_reviews

from ..params import Param
from .imdb import IMDB_KNOBS, IMDB_NOTES, adam_bce
from .lstm import _LSTM_KNOB, _lstm, describe_lstm
from .registry import Workload, register

SOURCE = "002_51261036f2f3f066.txt"
SCRIPTS = "minimaxir/keras-cntk-benchmark v2/test_files/"


def _bilstm_loader(params: dict) -> _data.Dataset:
    num_words, maxlen = int(params["max_features"]), int(params["maxlen"])
    split = imdb_data(params)
    n = len(split["x"]) if params.get("n_train") is None else min(params["n_train"], len(split["x"]))
    n_val = int(params["n_val"] or 0)
    xv, yv = imdb_val(split, params, n_val) if n_val else (None, None)
    extra = {"dataset": "IMDb", "max_features": num_words, "maxlen": maxlen,
             "mean_words": round(float(np.mean([len(s) for s in split["x"][:n]])), 1) if n else 0.0,
             "padding": "pre (keras.utils.pad_sequences: long reviews keep their last words)"}
    return _data.Dataset(pad_reviews(split["x"][:n], maxlen), split["y"][:n].astype(np.float32),
                         pad_reviews(xv, maxlen) if n_val else None, yv.astype(np.float32) if n_val else None,
                         split["source"], split["detail"], 2, extra)


def _bilstm(params: dict):
    """imdb_bidirectional_lstm.py: Embedding(20000, 128) -> Bidirectional(LSTM(64)) -> Dropout(0.5) -> Dense(1)."""
    import keras
    from keras import layers

    return keras.Sequential([
        keras.Input((int(params["maxlen"]),), dtype="int32"),
        layers.Embedding(int(params["max_features"]), 128, name="embedding"),
        layers.Bidirectional(_lstm(64, params, name="lstm"), name="bidirectional"),
        layers.Dropout(0.5, name="dropout"),
        layers.Dense(1, name="dense"),
        layers.Activation("sigmoid", dtype="float32", name="sigmoid"),
    ], name="bilstm_imdb")


# ---------------------------------------------------------------- registry

register(Workload(
    name="bilstm_imdb",
    notes={**IMDB_NOTES, "epochs": "(the source: 4)",
           "maxlen": "words per review after padding, the last ones kept (the source: 100)"},
    source=SOURCE,
    summary="Keras' imdb_bidirectional_lstm example (Embedding(20000, 128), Bidirectional(LSTM(64)), "
            "Dropout(0.5), maxlen 100, Adam, batch 32, 4 epochs): July 2017, plain LSTM: GPU 'twice as slow' "
            "as any CPU configuration; Nov 2017, CuDNNLSTM on GPU: TensorFlow K80 ~43 s/epoch, P100 ~27 s, "
            "32 vCPUs ~77 s, CNTK P100 ~140 s (v2 logs, validation on 25,000 reviews included)",
    defaults={"batch_size": 32, "epochs": 3, "n_train": 1000, "n_val": 0, "max_features": 20000,
              "maxlen": 100, "lstm_impl": "auto"},
    build=_bilstm,
    compile_args=adam_bce,
    load=_bilstm_loader,
    expected_params=2658945,  # 20000*128 + 2*4*(64*(128+64)+64) + 129 (CuDNNLSTM in Keras 2: 2,659,457)
    extra_params={
        **IMDB_KNOBS,
        "maxlen": Param("maxlen", int, "words per review after padding/truncation (source: 100)", minimum=1),
        "lstm_impl": _LSTM_KNOB,
    },
    describe=describe_lstm,
))
