"""Text corpora of seed 002's Keras text benchmarks: IMDb reviews and the Nietzsche text (no framework).

    read_imdb_npz(imdb_cache_file(), num_words)  -> x_train, y_train, x_test, y_test (Keras' encoding)
    synthetic_imdb(n, num_words, seed)            -> reviews, labels of IMDb's shapes
    imdb_data(params) / imdb_val(split, params, n)   -> the training split / validation reviews of a point
    pad_reviews(seqs, maxlen)                            -> keras.utils.pad_sequences without Keras
    synthetic_text(n_chars, seed); textgen_data(params); text_chars(params)   (Nietzsche)

IMDb from the Keras cache (``<KERAS_HOME>/datasets/imdb.npz``, read and indexed exactly as
``keras.datasets.imdb.load_data`` does) or downloaded by Keras when reachable; Nietzsche from
``<KERAS_HOME>/datasets/nietzsche.txt`` (``keras.utils.get_file``). Otherwise synthetic data of the
same shapes with learnable structure: reviews of IMDb-like lengths drawn from a Zipf vocabulary plus
class-dependent "sentiment" words; text from a sparse Markov chain over 57 characters.

The workloads ``fasttext_imdb``, ``bilstm_imdb`` (IMDb) and ``lstm_textgen`` (Nietzsche) in
``helpers.workloads`` read their data here; Keras is imported only inside the download paths.
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np

from helpers.data import loaders as _data

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
    its class's 100 "sentiment" words and 2% from the other class's. Easy by design: a bag-of-words rule
    with no training (the difference of the two class means) already labels 82% of held-out reviews
    right, and the workloads fit the training reviews almost perfectly within a few epochs. The data
    exists to time training at the real shapes, not to measure accuracy.
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
def imdb_split(source: str, num_words: int, n_corpus: int, seed: int, home: str) -> dict:
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


def imdb_data(params: dict, ngrams: bool = False) -> dict:
    n_train = params.get("n_train")
    # the n-gram table comes from the whole training split (as the source): a synthetic one has
    # IMDb's 25,000 reviews then; without n-grams only the reviews trained on are generated
    n_corpus = max(IMDB_TRAIN, n_train or 0) if (ngrams or n_train is None) else n_train
    return imdb_split(params["data_source"], int(params["max_features"]), n_corpus,
                       int(params["seed"]), str(_data.keras_home()))


def imdb_val(split: dict, params: dict, n_val: int) -> tuple[list, np.ndarray]:
    if split["source"] == "real":
        return split["x_test"][:n_val], split["y_test"][:n_val]
    return synthetic_imdb(n_val, int(params["max_features"]), int(params["seed"]) + 1)


def pad_reviews(seqs: list, maxlen: int) -> np.ndarray:
    """``keras.utils.pad_sequences(seqs, maxlen)``: zeros in front, long ones keep their *last* words."""
    out = np.zeros((len(seqs), maxlen), dtype=np.int32)
    for i, s in enumerate(seqs):
        s = s[-maxlen:]
        if len(s):
            out[i, maxlen - len(s):] = s
    return out


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


def textgen_data(params: dict) -> dict:
    n_train, maxlen, step = params.get("n_train"), int(params["maxlen"]), int(params["step"])
    need = NIETZSCHE_CHARS if n_train is None else max(NIETZSCHE_CHARS, n_train * step + maxlen + 1)
    return _nietzsche(params["data_source"], need, int(params["seed"]), str(_data.keras_home()))


def text_chars(params: dict) -> list[str]:
    """The source's ``chars = sorted(list(set(text)))`` (the synthetic alphabet when synthetic)."""
    t = textgen_data(params)
    return sorted(set(t.get("alphabet") or t["text"]))

