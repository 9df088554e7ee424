"""fasttext_imdb: seed 002's imdb_fasttext.py (Max Woolf, 2017), bigram fastText on IMDb.

    get("fasttext_imdb").load(params)   -> helpers.data.loaders.Dataset (padded reviews + n-gram ids)
    embedding_rows(params)              -> rows of the embedding (max_features + distinct n-grams + 1)

The script of ``minimaxir/keras-cntk-benchmark`` ``v2/test_files`` (a copy of the Keras 2 example),
layer for layer, with its optimiser, loss, batch size and preprocessing: 20,000 words, maxlen 400,
the 2..ngram_range-grams of the training reviews added as extra tokens (the source's ``ngram_set``
and ``add_ngram``, kept here: they are this script's feature engineering), embedding 50, global
average pooling, a sigmoid. Data: IMDb or synthetic reviews of its shapes (``helpers.data.text_sets``).
"""

from __future__ import annotations

import functools

import numpy as np

from helpers.data import loaders as _data
from helpers.data.text_sets import IMDB_TRAIN, imdb_data, imdb_split, imdb_val, pad_reviews

from ..params import Param
from .imdb import IMDB_KNOBS, IMDB_NOTES, adam_bce
from .registry import Workload, register

SOURCE = "002_51261036f2f3f066.txt"
SCRIPTS = "minimaxir/keras-cntk-benchmark v2/test_files/"

# ---------------------------------------------------------------- fastText n-grams

def _ngram_codes(seq: np.ndarray, n: int, count: int, base: int) -> np.ndarray:
    """The n-grams starting at positions 0..count-1 of ``seq``, each as one integer (base ``base``)."""
    code = np.zeros(count, dtype=np.int64)
    for k in range(n):
        code = code * base + seq[k:k + count]
    return code


def ngram_table(seqs: list, ngram_range: int, base: int) -> list[np.ndarray]:
    """Sorted unique 2..ngram_range-grams of ``seqs`` (the source's ``ngram_set``), one array per n."""
    tables = []
    for n in range(2, ngram_range + 1):
        parts = [_ngram_codes(s, n, len(s) - n + 1, base) for s in seqs if len(s) >= n]
        tables.append(np.unique(np.concatenate(parts)) if parts else np.zeros(0, dtype=np.int64))
    return tables


def add_ngrams(seqs: list, tables: list[np.ndarray], ngram_range: int, start_index: int, base: int) -> list:
    """The source's ``add_ngram``: append the id of every known n-gram, position by position.

    For position i in range(len - ngram_range + 1), the 2..ngram_range-grams starting there, in that
    order, if they are in the table. Ids: ``start_index`` + rank in the sorted table (bigrams first);
    the source numbers its Python set in iteration order instead: a permutation of the same ids.
    """
    offsets = np.cumsum([start_index] + [len(t) for t in tables])
    out = []
    for s in seqs:
        count = len(s) - ngram_range + 1
        if count <= 0:
            out.append(s)
            continue
        ids, hits = [], []
        for j, n in enumerate(range(2, ngram_range + 1)):
            t = tables[j]
            code = _ngram_codes(s, n, count, base)
            pos = np.searchsorted(t, code)
            hit = pos < len(t)
            hit[hit] = t[pos[hit]] == code[hit]
            ids.append(offsets[j] + pos)
            hits.append(hit)
        ids_, hits_ = np.stack(ids, axis=1).ravel(), np.stack(hits, axis=1).ravel()
        out.append(np.concatenate([s, ids_[hits_].astype(np.int32)]))
    return out


@functools.lru_cache(maxsize=2)
def _fasttext_tables(source: str, num_words: int, n_corpus: int, seed: int, ngram_range: int, home: str):
    split = imdb_split(source, num_words, n_corpus, seed, home)
    tables = ngram_table(split["x"], ngram_range, num_words) if ngram_range > 1 else []
    # source: start_index = max_features + 1; max_features = max(n-gram id) + 1
    rows = num_words + 1 + sum(len(t) for t in tables) if tables else num_words
    return tables, rows


def _fasttext_features(params: dict):
    n_train = params.get("n_train")
    ngram_range = int(params["ngram_range"])
    n_corpus = max(IMDB_TRAIN, n_train or 0) if (ngram_range > 1 or n_train is None) else n_train
    return _fasttext_tables(params["data_source"], int(params["max_features"]), n_corpus,
                            int(params["seed"]), ngram_range, str(_data.keras_home()))


def embedding_rows(params: dict) -> int:
    """Rows of the fastText embedding: ``max_features``, plus one per distinct training n-gram (+1)."""
    return _fasttext_features(params)[1]


def _fasttext_loader(params: dict) -> _data.Dataset:
    ngram_range, num_words, maxlen = int(params["ngram_range"]), int(params["max_features"]), int(params["maxlen"])
    split = imdb_data(params, ngrams=ngram_range > 1)
    tables, rows = _fasttext_features(params)
    n = len(split["x"]) if params.get("n_train") is None else min(params["n_train"], len(split["x"]))
    xs, y = split["x"][:n], split["y"][:n]
    n_val = int(params["n_val"] or 0)
    xv, yv = imdb_val(split, params, n_val) if n_val else ([], None)
    mean_words = float(np.mean([len(s) for s in xs])) if n else 0.0
    if tables:
        xs = add_ngrams(xs, tables, ngram_range, num_words + 1, num_words)
        xv = add_ngrams(xv, tables, ngram_range, num_words + 1, num_words) if n_val else xv
    extra = {"dataset": "IMDb", "max_features": num_words, "maxlen": maxlen, "ngram_range": ngram_range,
             "ngram_corpus_reviews": len(split["x"]) if tables else 0,
             "distinct_ngrams": int(sum(len(t) for t in tables)), "embedding_rows": int(rows),
             "mean_words": round(mean_words, 1),
             "mean_tokens_with_ngrams": round(float(np.mean([len(s) for s in xs])), 1) if n else 0.0,
             "padding": "pre (keras.utils.pad_sequences: long reviews keep their last tokens)"}
    return _data.Dataset(pad_reviews(xs, maxlen), y.astype(np.float32), pad_reviews(xv, maxlen) if n_val else None,
                         yv.astype(np.float32) if n_val else None, split["source"], split["detail"], 2, extra)


def _fasttext(params: dict):
    """imdb_fasttext.py: Embedding(max_features, 50) -> GlobalAveragePooling1D -> Dense(1, sigmoid).

    ``max_features`` grows with the bigram table (one row per distinct training bigram), as in the
    source, so the model is built from the data.
    """
    import keras
    from keras import layers

    return keras.Sequential([
        keras.Input((int(params["maxlen"]),), dtype="int32"),
        layers.Embedding(embedding_rows(params), 50, name="embedding"),
        layers.GlobalAveragePooling1D(name="average"),
        layers.Dense(1, name="dense"),
        layers.Activation("sigmoid", dtype="float32", name="sigmoid"),  # float32 under mixed precision
    ], name="fasttext_imdb")


# ---------------------------------------------------------------- registry

register(Workload(
    name="fasttext_imdb",
    notes={**IMDB_NOTES, "epochs": "(the source: 5)",
           "maxlen": "tokens per review after padding, the last ones kept (the source: 400)",
           "ngram_range": "n-gram features: 1 none, 2 bigrams (the source), 3 trigrams"},
    source=SOURCE,
    summary="Keras' imdb_fasttext example with bigrams (20,000 words, maxlen 400, embedding 50, Adam, "
            "batch 32, 5 epochs, validation on the 25,000 test reviews): TensorFlow 1.4 ~57 s/epoch on a K80, "
            "~20 s on a P100, ~186 s on 32 and ~202 s on 16 Skylake vCPUs (v2 logs, validation included); "
            "'GPUs are much, much faster than CPUs'; val accuracy 0.904",
    defaults={"batch_size": 32, "epochs": 3, "n_train": 2000, "n_val": 0, "max_features": 20000,
              "maxlen": 400, "ngram_range": 2},
    build=_fasttext,
    compile_args=adam_bce,
    load=_fasttext_loader,
    expected_params=None,  # embedding rows come from the bigram table: embedding_rows * 50 + 51
    extra_params={
        **IMDB_KNOBS,
        "maxlen": Param("maxlen", int, "tokens per review after padding/truncation (source: 400)", minimum=1),
        "ngram_range": Param("ngram_range", int, "n-gram features: 1 none, 2 bigrams (source), 3 trigrams",
                             choices=(1, 2, 3)),
    },
))
