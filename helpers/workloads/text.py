"""fasttext_imdb, bilstm_imdb, lstm_textgen: seed 002's Keras text benchmarks (Max Woolf, 2017).

The three scripts of ``minimaxir/keras-cntk-benchmark`` ``v2/test_files`` (copies of the Keras 2
examples), layer for layer, with their optimiser, loss, batch size and preprocessing:

    fasttext_imdb   imdb_fasttext.py            bigram fastText on IMDb (20,000 words, maxlen 400)
    bilstm_imdb     imdb_bidirectional_lstm.py  Embedding(20000, 128) + Bidirectional(LSTM(64)), maxlen 100
    lstm_textgen    lstm_text_generation.py     LSTM(128) next-character model on Nietzsche (maxlen 40, step 3)

Data: IMDb from the Keras cache (``<KERAS_HOME>/datasets/imdb.npz``, read and indexed exactly as
``keras.datasets.imdb.load_data`` does) or downloaded by Keras when reachable; Nietzsche from
``<KERAS_HOME>/datasets/nietzsche.txt`` (``keras.utils.get_file``). Otherwise synthetic data of the
same shapes with learnable structure: reviews of IMDb-like lengths drawn from a Zipf vocabulary plus
class-dependent "sentiment" words; text from a sparse Markov chain over 57 characters.

The LSTM workloads take ``lstm_impl`` (seed 002 found the LSTM kernel decisive: CuDNNLSTM made
TensorFlow on a K80 7x faster): ``auto`` = ``keras.layers.LSTM(use_cudnn="auto")`` (Keras 3's
default: the backend's fused cuDNN kernel when it sees a GPU, as the source's CuDNNLSTM on GPU),
``generic`` = ``use_cudnn=False`` (Keras' step-by-step RNN loop everywhere, as the July 2017 post's
plain LSTM on GPU), ``cudnn`` = ``use_cudnn=True`` (cuDNN or a failed point: GPU only). After
training, ``describe`` writes into the record which kernel the backend ran (``workload_info``). On
JAX with a bfloat16 compute dtype ``auto`` takes the generic loop: jaxlib's cuDNN RNN has no bfloat16
kernel (``cudnn_dtype_blocker``).
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np

from .. import data as _data
from ..params import Param
from . import Workload, register

SOURCE = "002_51261036f2f3f066.txt"
SCRIPTS = "minimaxir/keras-cntk-benchmark v2/test_files/"

# ---------------------------------------------------------------- IMDb (Keras' format)

IMDB_HOST = "storage.googleapis.com"
IMDB_FILE = "imdb.npz"
IMDB_TRAIN = 25000  # reviews in the training (and the test) split
IMDB_VOCAB = 88584  # distinct words in the full dataset (Keras' word index)
# keras.datasets.imdb.load_data defaults: shuffle seed, start / out-of-vocabulary markers, offset
IMDB_SHUFFLE_SEED, START_CHAR, OOV_CHAR, INDEX_FROM = 113, 1, 2, 3
# synthetic reviews: word counts lognormal like IMDb's (median 174, mean ~238 words, 10..2494)
_LEN_MEDIAN, _LEN_SIGMA, _LEN_MIN, _LEN_MAX = 174, 0.79, 10, 2494
# Zipf exponent of the synthetic vocabulary: ~1.25M distinct bigrams over 25,000 reviews
_ZIPF = 1.15


def imdb_cache_file() -> Path | None:
    p = _data.keras_home() / "datasets" / IMDB_FILE
    return p if p.is_file() else None


def _load_npz(path: Path) -> dict:
    try:  # Keras' restricted unpickler (object arrays of word-index lists)
        from keras.src.datasets.npz_utils import load_npz
    except ImportError:  # older Keras: what its imdb loader itself did
        with np.load(path, allow_pickle=True) as f:
            return {k: f[k] for k in f.files}
    return load_npz(str(path))


def read_imdb_npz(path: Path, num_words: int) -> tuple[list, np.ndarray, list, np.ndarray]:
    """``keras.datasets.imdb.load_data(num_words=num_words)`` on a local ``imdb.npz``.

    Same shuffle (seed 113), start marker 1, word indices offset by 3, words at or beyond
    ``num_words`` replaced by the out-of-vocabulary marker 2. Sequences as int32 arrays.
    """
    f = _load_npz(path)
    x_train, y_train, x_test, y_test = f["x_train"], f["y_train"], f["x_test"], f["y_test"]
    rng = np.random.RandomState(IMDB_SHUFFLE_SEED)
    idx = np.arange(len(x_train))
    rng.shuffle(idx)
    x_train, y_train = x_train[idx], y_train[idx]
    idx = np.arange(len(x_test))
    rng.shuffle(idx)
    x_test, y_test = x_test[idx], y_test[idx]

    def encode(seq) -> np.ndarray:
        a = np.concatenate([[START_CHAR], np.asarray(seq, dtype=np.int64) + INDEX_FROM])
        a[a >= num_words] = OOV_CHAR
        return a.astype(np.int32)

    return ([encode(s) for s in x_train], np.asarray(y_train, dtype=np.int64),
            [encode(s) for s in x_test], np.asarray(y_test, dtype=np.int64))


def synthetic_imdb(n: int, num_words: int, seed: int) -> tuple[list, np.ndarray]:
    """``n`` reviews in Keras' IMDb encoding and their 0/1 labels, learnable from the words.

    Words follow a Zipf law over IMDb's 88,584-word vocabulary (ranks beyond ``num_words`` become
    the out-of-vocabulary marker, as in the real data); 8% of the words of a review are drawn from
    its class's 100 "sentiment" words and 2% from the other class's, so a bag of words separates the
    classes but not trivially.
    """
    rng = np.random.default_rng(seed)
    ranks = np.arange(INDEX_FROM + 1, IMDB_VOCAB + INDEX_FROM)
    cdf = np.cumsum(1.0 / (ranks - INDEX_FROM).astype(np.float64) ** _ZIPF)
    cdf /= cdf[-1]
    lens = np.clip(rng.lognormal(np.log(_LEN_MEDIAN), _LEN_SIGMA, size=n).astype(np.int64), _LEN_MIN, _LEN_MAX)
    y = rng.integers(0, 2, size=n)
    words = ranks[np.minimum(np.searchsorted(cdf, rng.random(int(lens.sum()))), len(ranks) - 1)]
    # class words: mid-frequency ranks, the same for every seed (train and validation agree)
    hi = max(min(2000, num_words - 1), 30)
    cls = np.random.default_rng(20171128).choice(np.arange(10, hi), size=(2, 100), replace=hi - 10 < 200)
    lab = np.repeat(y, lens)
    u = rng.random(len(words))
    own, other = u < 0.08, (u >= 0.08) & (u < 0.10)
    pick = rng.integers(0, 100, size=len(words))
    words[own] = cls[lab[own], pick[own]]
    words[other] = cls[1 - lab[other], pick[other]]
    words[words >= num_words] = OOV_CHAR
    seqs = np.split(words.astype(np.int32), np.cumsum(lens)[:-1])
    return [np.concatenate([[START_CHAR], s]).astype(np.int32) for s in seqs], y.astype(np.int64)


@functools.lru_cache(maxsize=2)
def _imdb_split(source: str, num_words: int, n_corpus: int, seed: int, home: str) -> dict:
    """The training split (``n_corpus`` synthetic reviews, or all real ones) and where it came from.

    ``home`` (the Keras cache root) is part of the cache key only.
    """
    if source not in ("auto", "real", "synthetic"):
        raise ValueError(f"data_source must be auto, real or synthetic, not {source!r}")
    if source in ("auto", "real"):
        path = imdb_cache_file()
        detail = "IMDb from the Keras cache"
        if path is None and _data.reachable(IMDB_HOST):
            import keras

            keras.datasets.imdb.load_data()  # downloads (and checks) <KERAS_HOME>/datasets/imdb.npz
            path, detail = imdb_cache_file(), "IMDb downloaded by keras.datasets.imdb"
        if path is not None:
            xt, yt, xv, yv = read_imdb_npz(path, num_words)
            return {"source": "real", "detail": detail, "x": xt, "y": yt, "x_test": xv, "y_test": yv}
        if source == "real":
            raise _data.DataError(
                f"data_source='real' but IMDb is not in the Keras cache ({_data.keras_home() / 'datasets'}) "
                f"and {IMDB_HOST} is not reachable; use data_source='auto' or 'synthetic'")
        detail = "IMDb neither cached nor reachable: synthetic reviews of the same shapes"
    else:
        detail = "synthetic reviews of IMDb's shapes (requested)"
    x, y = synthetic_imdb(n_corpus, num_words, seed)
    return {"source": "synthetic", "detail": detail, "x": x, "y": y, "x_test": None, "y_test": None}


def _imdb(params: dict, ngrams: bool = False) -> dict:
    n_train = params.get("n_train")
    # the n-gram table comes from the whole training split (as the source): a synthetic one has
    # IMDb's 25,000 reviews then; without n-grams only the reviews trained on are generated
    n_corpus = max(IMDB_TRAIN, n_train or 0) if (ngrams or n_train is None) else n_train
    return _imdb_split(params.get("data_source", "auto"), int(params["max_features"]), n_corpus,
                       int(params.get("seed", 0)), str(_data.keras_home()))


def _imdb_val(split: dict, params: dict, n_val: int) -> tuple[list, np.ndarray]:
    if split["source"] == "real":
        return split["x_test"][:n_val], split["y_test"][:n_val]
    return synthetic_imdb(n_val, int(params["max_features"]), int(params.get("seed", 0)) + 1)


def _pad(seqs: list, maxlen: int) -> np.ndarray:
    """``keras.utils.pad_sequences(seqs, maxlen)``: zeros in front, long ones keep their *last* words."""
    out = np.zeros((len(seqs), maxlen), dtype=np.int32)
    for i, s in enumerate(seqs):
        s = s[-maxlen:]
        if len(s):
            out[i, maxlen - len(s):] = s
    return out


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
    split = _imdb_split(source, num_words, n_corpus, seed, home)
    tables = ngram_table(split["x"], ngram_range, num_words) if ngram_range > 1 else []
    # source: start_index = max_features + 1; max_features = max(n-gram id) + 1
    rows = num_words + 1 + sum(len(t) for t in tables) if tables else num_words
    return tables, rows


def _fasttext_features(params: dict):
    n_train = params.get("n_train")
    ngram_range = int(params["ngram_range"])
    n_corpus = max(IMDB_TRAIN, n_train or 0) if (ngram_range > 1 or n_train is None) else n_train
    return _fasttext_tables(params.get("data_source", "auto"), int(params["max_features"]), n_corpus,
                            int(params.get("seed", 0)), ngram_range, str(_data.keras_home()))


def embedding_rows(params: dict) -> int:
    """Rows of the fastText embedding: ``max_features``, plus one per distinct training n-gram (+1)."""
    return _fasttext_features(params)[1]


def _fasttext_loader(params: dict) -> _data.Dataset:
    ngram_range, num_words, maxlen = int(params["ngram_range"]), int(params["max_features"]), int(params["maxlen"])
    split = _imdb(params, ngrams=ngram_range > 1)
    tables, rows = _fasttext_features(params)
    n = len(split["x"]) if params.get("n_train") is None else min(params["n_train"], len(split["x"]))
    xs, y = split["x"][:n], split["y"][:n]
    n_val = int(params.get("n_val", 0) or 0)
    xv, yv = _imdb_val(split, params, n_val) if n_val else ([], None)
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
    return _data.Dataset(_pad(xs, maxlen), y.astype(np.float32), _pad(xv, maxlen) if n_val else None,
                         yv.astype(np.float32) if n_val else None, split["source"], split["detail"], 2, extra)


def _bilstm_loader(params: dict) -> _data.Dataset:
    num_words, maxlen = int(params["max_features"]), int(params["maxlen"])
    split = _imdb(params)
    n = len(split["x"]) if params.get("n_train") is None else min(params["n_train"], len(split["x"]))
    n_val = int(params.get("n_val", 0) or 0)
    xv, yv = _imdb_val(split, params, n_val) if n_val else (None, None)
    extra = {"dataset": "IMDb", "max_features": num_words, "maxlen": maxlen,
             "mean_words": round(float(np.mean([len(s) for s in split["x"][:n]])), 1) if n else 0.0,
             "padding": "pre (keras.utils.pad_sequences: long reviews keep their last words)"}
    return _data.Dataset(_pad(split["x"][:n], maxlen), split["y"][:n].astype(np.float32),
                         _pad(xv, maxlen) if n_val else None, yv.astype(np.float32) if n_val else None,
                         split["source"], split["detail"], 2, extra)


# ---------------------------------------------------------------- Nietzsche

NIETZSCHE_HOST = "s3.amazonaws.com"
NIETZSCHE_URL = "https://s3.amazonaws.com/text-datasets/nietzsche.txt"
NIETZSCHE_FILE = "nietzsche.txt"
NIETZSCHE_CHARS = 600893  # corpus length the example prints (lower-cased)
# 57 characters, as many as the lower-cased Nietzsche text has
SYNTH_ALPHABET = "\n !\"'(),-.0123456789:;=?[]_abcdefghijklmnopqrstuvwxyz\xe4\xe6\xe9\xeb"


def nietzsche_cache_file() -> Path | None:
    p = _data.keras_home() / "datasets" / NIETZSCHE_FILE
    return p if p.is_file() else None


def synthetic_text(n_chars: int, seed: int, alphabet: str = SYNTH_ALPHABET) -> str:
    """``n_chars`` characters of a sparse first-order Markov chain over ``alphabet``.

    Each character has a handful of likely successors (Dirichlet weights over 4 of them, plus a
    little mass everywhere): a next-character model can get well below log(len(alphabet)).
    """
    k = len(alphabet)
    prng = np.random.default_rng(4242)  # the chain is the same for every seed
    trans = np.full((k, k), 0.02 / k)
    for a in range(k):
        succ = prng.choice(k, size=4, replace=False)
        trans[a, succ] += 0.98 * prng.dirichlet(np.ones(4))
    trans /= trans.sum(axis=1, keepdims=True)
    cdf = np.cumsum(trans, axis=1)
    rng = np.random.default_rng(seed)
    chains = 512  # run that many chains side by side (vectorised), then concatenate them
    length = -(-n_chars // chains)
    out = np.empty((length, chains), dtype=np.int64)
    c = rng.integers(k, size=chains)
    for i in range(length):
        u = rng.random(chains)
        c = np.minimum((cdf[c] < u[:, None]).sum(axis=1), k - 1)
        out[i] = c
    out = out.T.ravel()[:n_chars]
    return "".join(np.asarray(list(alphabet))[out])


@functools.lru_cache(maxsize=2)
def _nietzsche(source: str, n_chars_needed: int, seed: int, home: str) -> dict:
    if source not in ("auto", "real", "synthetic"):
        raise ValueError(f"data_source must be auto, real or synthetic, not {source!r}")
    if source in ("auto", "real"):
        path = nietzsche_cache_file()
        detail = "Nietzsche from the Keras cache"
        if path is None and _data.reachable(NIETZSCHE_HOST):
            import keras

            path = Path(keras.utils.get_file(NIETZSCHE_FILE, origin=NIETZSCHE_URL))
            detail = "Nietzsche downloaded by keras.utils.get_file"
        if path is not None:
            text = path.read_text(encoding="utf-8").lower()  # the source: open(path).read().lower()
            return {"source": "real", "detail": detail, "text": text}
        if source == "real":
            raise _data.DataError(
                f"data_source='real' but {NIETZSCHE_FILE} is not in the Keras cache "
                f"({_data.keras_home() / 'datasets'}) and {NIETZSCHE_HOST} is not reachable; "
                "use data_source='auto' or 'synthetic'")
        detail = "Nietzsche neither cached nor reachable: synthetic Markov-chain text, 57 characters"
    else:
        detail = "synthetic Markov-chain text over 57 characters (requested)"
    return {"source": "synthetic", "detail": detail, "text": synthetic_text(n_chars_needed, seed),
            "alphabet": SYNTH_ALPHABET}


def _text(params: dict) -> dict:
    n_train, maxlen, step = params.get("n_train"), int(params["maxlen"]), int(params["step"])
    need = NIETZSCHE_CHARS if n_train is None else max(NIETZSCHE_CHARS, n_train * step + maxlen + 1)
    return _nietzsche(params.get("data_source", "auto"), need, int(params.get("seed", 0)), str(_data.keras_home()))


def text_chars(params: dict) -> list[str]:
    """The source's ``chars = sorted(list(set(text)))`` (the synthetic alphabet when synthetic)."""
    t = _text(params)
    return sorted(set(t.get("alphabet") or t["text"]))


def _textgen_loader(params: dict) -> _data.Dataset:
    """The source's vectorisation: windows of ``maxlen`` characters every ``step``, one-hot (bool)."""
    t = _text(params)
    text, maxlen, step = t["text"], int(params["maxlen"]), int(params["step"])
    chars = text_chars(params)
    index = {c: i for i, c in enumerate(chars)}
    starts = np.arange(0, len(text) - maxlen, step)
    n_total = len(starts)
    n = n_total if params.get("n_train") is None else min(int(params["n_train"]), n_total)
    if n < n_total:  # a random subset of the windows, in text order
        starts = np.sort(np.random.default_rng(int(params.get("seed", 0))).choice(starts, n, replace=False))
    codes = np.fromiter((index[c] for c in text), dtype=np.int32, count=len(text))
    win = codes[starts[:, None] + np.arange(maxlen)[None, :]]
    x = np.zeros((n, maxlen, len(chars)), dtype=bool)
    np.put_along_axis(x, win[:, :, None], True, axis=2)
    y = np.zeros((n, len(chars)), dtype=bool)
    y[np.arange(n), codes[starts + maxlen]] = True
    n_val = int(params.get("n_val", 0) or 0)
    xv = yv = None
    if n_val:  # windows at random positions (the source has no validation)
        vs = np.random.default_rng(int(params.get("seed", 0)) + 1).integers(0, len(text) - maxlen, n_val)
        xv = np.zeros((n_val, maxlen, len(chars)), dtype=bool)
        np.put_along_axis(xv, codes[vs[:, None] + np.arange(maxlen)[None, :]][:, :, None], True, axis=2)
        yv = np.zeros((n_val, len(chars)), dtype=bool)
        yv[np.arange(n_val), codes[vs + maxlen]] = True
    extra = {"dataset": "Nietzsche", "corpus_chars": len(text), "n_chars": len(chars), "maxlen": maxlen,
             "step": step, "sequences_total": int(n_total), "one_hot_dtype": "bool"}
    return _data.Dataset(x, y, xv, yv, t["source"], t["detail"], len(chars), extra)


# ---------------------------------------------------------------- models

LSTM_IMPLS = ("auto", "generic", "cudnn")
_USE_CUDNN = {"auto": "auto", "generic": False, "cudnn": True}


def _lstm(units: int, params: dict, **kwargs):
    """``keras.layers.LSTM`` with ``use_cudnn`` from the ``lstm_impl`` knob (checked before training)."""
    import keras
    from keras.src import backend as kb

    impl = params.get("lstm_impl", "auto")
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


def _adam_bce(params: dict) -> dict:
    # both IMDb scripts: compile('adam', 'binary_crossentropy', metrics=['accuracy']) (Keras defaults)
    return {"optimizer": "adam", "loss": "binary_crossentropy", "metrics": ["accuracy"]}


def _rmsprop_cce(params: dict) -> dict:
    import keras

    # RMSprop(lr=0.01), categorical_crossentropy, no metrics (as the source: only the loss is logged)
    return {"optimizer": keras.optimizers.RMSprop(learning_rate=0.01), "loss": "categorical_crossentropy"}


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
        "lstm_impl": params.get("lstm_impl", "auto"),
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


# ---------------------------------------------------------------- registry

_IMDB_KNOBS = {
    "max_features": Param("max_features", int, "vocabulary: the most frequent words kept (source: 20000)",
                          minimum=4),
}
_LSTM_KNOB = Param("lstm_impl", str, "LSTM kernel: auto (cuDNN on GPU), generic (no cuDNN), cudnn (GPU only)",
                   choices=LSTM_IMPLS)

register(Workload(
    name="fasttext_imdb",
    source=SOURCE,
    summary="Keras' imdb_fasttext example with bigrams (20,000 words, maxlen 400, embedding 50, Adam, "
            "batch 32, 5 epochs, validation on the 25,000 test reviews): TensorFlow 1.4 ~57 s/epoch on a K80, "
            "~20 s on a P100, ~186 s on 32 and ~202 s on 16 Skylake vCPUs (v2 logs, validation included); "
            "'GPUs are much, much faster than CPUs'; val accuracy 0.904",
    defaults={"batch_size": 32, "epochs": 3, "n_train": 2000, "n_val": 0, "max_features": 20000,
              "maxlen": 400, "ngram_range": 2},
    build=_fasttext,
    compile_args=_adam_bce,
    load=_fasttext_loader,
    expected_params=None,  # embedding rows come from the bigram table: embedding_rows * 50 + 51
    extra_params={
        **_IMDB_KNOBS,
        "maxlen": Param("maxlen", int, "tokens per review after padding/truncation (source: 400)", minimum=1),
        "ngram_range": Param("ngram_range", int, "n-gram features: 1 none, 2 bigrams (source), 3 trigrams",
                             choices=(1, 2, 3)),
    },
))

register(Workload(
    name="bilstm_imdb",
    source=SOURCE,
    summary="Keras' imdb_bidirectional_lstm example (Embedding(20000, 128), Bidirectional(LSTM(64)), "
            "Dropout(0.5), maxlen 100, Adam, batch 32, 4 epochs): July 2017, plain LSTM: GPU 'twice as slow' "
            "as any CPU configuration; Nov 2017, CuDNNLSTM on GPU: TensorFlow K80 ~43 s/epoch, P100 ~27 s, "
            "32 vCPUs ~77 s, CNTK P100 ~140 s (v2 logs, validation on 25,000 reviews included)",
    defaults={"batch_size": 32, "epochs": 3, "n_train": 1000, "n_val": 0, "max_features": 20000,
              "maxlen": 100, "lstm_impl": "auto"},
    build=_bilstm,
    compile_args=_adam_bce,
    load=_bilstm_loader,
    expected_params=2658945,  # 20000*128 + 2*4*(64*(128+64)+64) + 129 (CuDNNLSTM in Keras 2: 2,659,457)
    extra_params={
        **_IMDB_KNOBS,
        "maxlen": Param("maxlen", int, "words per review after padding/truncation (source: 100)", minimum=1),
        "lstm_impl": _LSTM_KNOB,
    },
    describe=describe_lstm,
))

register(Workload(
    name="lstm_textgen",
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
