"""fasttext_imdb, bilstm_imdb, lstm_textgen (seed 002's Keras text scripts): data, models, notebooks."""

import json
import math
import os
from pathlib import Path

import numpy as np
import pytest
from support import INSTALLED, NIETZSCHE_SAMPLE, ONE, in_fresh_python, write_imdb_npz, write_nietzsche
from support.workload_points import by_backend, script, script_group

from helpers import params
from helpers.data import loaders as data
from helpers.data import text_sets as datasets_text
from helpers.workloads import fasttext_imdb, get


def _in_fresh_python(code: str, backend: str = ONE) -> str:
    return in_fresh_python(code, backend)


# ---------------------------------------------------------------- files in the Keras cache format

def source_bigrams(raw_reviews, num_words: int) -> set:
    """The source's ngram_set on Keras' encoding (start 1, index_from 3, out-of-vocabulary 2)."""
    out = set()
    for r in raw_reviews:
        seq = [w if w < num_words else 2 for w in [1] + [w + 3 for w in r]]
        out.update(zip(seq, seq[1:]))
    return out


# ---------------------------------------------------------------- data (no framework)

def _source_add_ngram(sequences, token_indice, ngram_range):
    """imdb_fasttext.py's add_ngram, verbatim logic."""
    new_sequences = []
    for input_list in sequences:
        new_list = list(input_list)
        for i in range(len(new_list) - ngram_range + 1):
            for ngram_value in range(2, ngram_range + 1):
                ngram = tuple(new_list[i:i + ngram_value])
                if ngram in token_indice:
                    new_list.append(token_indice[ngram])
        new_sequences.append(new_list)
    return new_sequences


@pytest.mark.parametrize("ngram_range", [2, 3])
def test_ngram_features_match_the_source_up_to_id_numbering(ngram_range):
    rng = np.random.default_rng(1)
    base = 50
    train = [rng.integers(1, base, size=int(rng.integers(1, 30))).astype(np.int32) for _ in range(40)]
    test = [rng.integers(1, base, size=int(rng.integers(1, 30))).astype(np.int32) for _ in range(10)]
    # the source: every 2..n-gram of the training set, numbered from max_features + 1
    ngram_set = set()
    for s in train:
        for n in range(2, ngram_range + 1):
            ngram_set.update(zip(*[list(s)[i:] for i in range(n)]))
    token_indice = {v: k + base + 1 for k, v in enumerate(ngram_set)}
    indice_token = {i: t for t, i in token_indice.items()}
    tables = fasttext_imdb.ngram_table(train, ngram_range, base)
    assert sum(len(t) for t in tables) == len(ngram_set)
    ours_ids = {}
    for j, t in enumerate(tables):  # our numbering: bigrams first, then trigrams, sorted
        off = base + 1 + sum(len(x) for x in tables[:j])
        for r, code in enumerate(t):
            n = j + 2
            ours_ids[off + r] = tuple(int(code) // base ** (n - 1 - k) % base for k in range(n))
    for seqs in (train, test):
        src = _source_add_ngram([list(s) for s in seqs], token_indice, ngram_range)
        ours = fasttext_imdb.add_ngrams(seqs, tables, ngram_range, base + 1, base)
        for a, b, s in zip(src, ours, seqs):
            assert len(a) == len(b)
            assert list(b[:len(s)]) == list(s)
            assert [indice_token[i] for i in a[len(s):]] == [ours_ids[int(i)] for i in b[len(s):]]


def test_imdb_npz_read_like_keras_and_real_loader(tmp_path, monkeypatch):
    home = Path(os.environ["KERAS_HOME"])
    raw = write_imdb_npz(home)
    x, y, xt, yt = datasets_text.read_imdb_npz(raw, 5000)
    assert len(x) == 160 and len(xt) == 40 and set(np.unique(y)) <= {0, 1}
    assert all(s[0] == 1 and s.max() < 5000 and s.dtype == np.int32 for s in x)
    # the same words as the file, offset by 3, out-of-vocabulary -> 2, in keras' shuffled order
    f = np.load(raw, allow_pickle=True)
    order = np.arange(160)
    np.random.RandomState(113).shuffle(order)
    first = [w + 3 if w + 3 < 5000 else 2 for w in f["x_train"][order[0]]]
    assert list(x[0]) == [1] + first
    p = {**get("fasttext_imdb").defaults, "data_source": "real", "n_train": 100, "n_val": 20, "max_features": 5000,
         "maxlen": 60, "ngram_range": 2, "seed": 0}
    d = get("fasttext_imdb").load(p)
    assert d.source == "real" and d.x_train.shape == (100, 60) and d.x_val.shape == (20, 60)
    rows = 5000 + 1 + len(source_bigrams(f["x_train"], 5000))  # the table comes from all 160 reviews
    assert d.extra["embedding_rows"] == rows == fasttext_imdb.embedding_rows(p)
    assert d.x_train.max() < rows and d.extra["ngram_corpus_reviews"] == 160
    b = get("bilstm_imdb").load({**get("bilstm_imdb").defaults, "data_source": "real", "n_train": 50,
                                 "max_features": 5000, "maxlen": 30})
    assert b.source == "real" and b.x_train.shape == (50, 30) and b.x_train.dtype == np.int32
    assert list(b.x_train[0][-min(30, len(x[0])):]) == list(x[0][-30:])  # pre-padding keeps the end


def test_real_data_required_but_missing_fails_clearly():
    for name, extra in (("bilstm_imdb", {}), ("lstm_textgen", {})):
        p = {**get(name).defaults, **extra, "data_source": "real", "seed": 0}
        with pytest.raises(data.DataError, match="not in the Keras cache"):
            get(name).load(p)


def test_nietzsche_vectorised_like_the_source():
    home = Path(os.environ["KERAS_HOME"])
    write_nietzsche(home)
    txt = (NIETZSCHE_SAMPLE * 6).lower()
    p = {**get("lstm_textgen").defaults, "data_source": "auto", "n_train": None, "seed": 0}
    d = get("lstm_textgen").load(p)
    chars = sorted(set(txt))
    assert d.source == "real" and d.extra["n_chars"] == len(chars) == len(datasets_text.text_chars(p))
    # the source's loop
    sentences = [txt[i:i + 40] for i in range(0, len(txt) - 40, 3)]
    nxt = [txt[i + 40] for i in range(0, len(txt) - 40, 3)]
    X = np.zeros((len(sentences), 40, len(chars)), dtype=bool)
    Y = np.zeros((len(sentences), len(chars)), dtype=bool)
    for i, s in enumerate(sentences):
        for t, c in enumerate(s):
            X[i, t, chars.index(c)] = 1
        Y[i, chars.index(nxt[i])] = 1
    assert d.x_train.shape == X.shape and (d.x_train == X).all() and (d.y_train == Y).all()
    assert d.extra["sequences_total"] == len(sentences)
    sub = get("lstm_textgen").load({**p, "n_train": 50})
    assert sub.x_train.shape == (50, 40, len(chars)) and (sub.x_train.sum(axis=2) == 1).all()


def test_synthetic_data_has_the_sources_shapes():
    x, y = datasets_text.synthetic_imdb(400, 20000, 0)
    lens = np.array([len(s) for s in x])
    assert 150 < lens.mean() < 330 and lens.min() >= 11 and lens.max() <= 2495
    assert all(s[0] == 1 for s in x) and max(s.max() for s in x) < 20000 and set(np.unique(y)) == {0, 1}
    assert (np.concatenate(x) == 2).mean() > 0.005  # out-of-vocabulary words exist, as in IMDb
    assert len(datasets_text.SYNTH_ALPHABET) == len(set(datasets_text.SYNTH_ALPHABET)) == 57
    t = datasets_text.synthetic_text(20000, 0)
    assert len(t) == 20000 and set(t) <= set(datasets_text.SYNTH_ALPHABET)
    d = get("lstm_textgen").load({**get("lstm_textgen").defaults, "data_source": "synthetic", "n_train": 300,
                                  "seed": 0})
    assert d.source == "synthetic" and d.x_train.shape == (300, 40, 57) and d.y_train.shape == (300, 57)
    assert d.extra["sequences_total"] == 200285  # the source's count for Nietzsche's 600,893 characters


def test_knobs_validate():
    for name in ("bilstm_imdb", "lstm_textgen"):
        spec = {**params.COMMON, **get(name).extra_params}
        params.validate({"lstm_impl": "generic"}, spec=spec)
        with pytest.raises(params.ParamError, match="key 'lstm_impl' has value 'cudnn_v2'"):
            params.validate({"lstm_impl": "cudnn_v2"}, spec=spec)
    spec = {**params.COMMON, **get("fasttext_imdb").extra_params}
    with pytest.raises(params.ParamError, match="key 'ngram_range' has value 4"):
        params.validate({"ngram_range": 4}, spec=spec)
    assert get("fasttext_imdb").defaults["batch_size"] == get("bilstm_imdb").defaults["batch_size"] == 32
    assert get("lstm_textgen").defaults["batch_size"] == 128


# ---------------------------------------------------------------- models (a fresh Python, one backend)

def test_parameter_counts_keras_reader_and_lstm_kernel_record(tmp_path):
    home = tmp_path / "kh"
    raw = write_imdb_npz(home)
    out = _in_fresh_python(
        "import json, os\n"
        f"os.environ['KERAS_HOME'] = {str(home)!r}\n"
        "import numpy as np\n"
        "import keras\n"
        "from keras.src.datasets import imdb as kimdb\n"
        "from helpers.data import text_sets as datasets_text\n"
        "from helpers.workloads import fasttext_imdb, get, lstm\n"
        "res = {}\n"
        "for name, extra in [('bilstm_imdb', {}), ('lstm_textgen', {'data_source': 'synthetic'}),\n"
        "                    ('fasttext_imdb', {'ngram_range': 1, 'data_source': 'synthetic'}),\n"
        "                    ('fasttext_imdb', {'ngram_range': 2, 'data_source': 'real', 'max_features': 5000})]:\n"
        "    p = {**get(name).defaults, **extra, 'seed': 0}\n"
        "    m = get(name).build(p)\n"
        "    res[f\"{name}-{extra.get('ngram_range', '')}\"] = [m.count_params(), list(m.output_shape[1:])]\n"
        "    if name == 'fasttext_imdb':\n"
        "        res[f\"rows-{extra['ngram_range']}\"] = fasttext_imdb.embedding_rows(p)\n"
        "p = {**get('bilstm_imdb').defaults, 'seed': 0}\n"
        "for impl in ('auto', 'generic'):\n"
        "    m = get('bilstm_imdb').build({**p, 'lstm_impl': impl})\n"
        "    res[impl] = lstm.describe_lstm(m, {**p, 'lstm_impl': impl})\n"
        "try:\n"
        "    get('bilstm_imdb').build({**p, 'lstm_impl': 'cudnn'})\n"
        "except ValueError as e:\n"
        "    res['cudnn_error'] = str(e)\n"
        "# keras' own loader on the same file (its download step replaced by the cached path)\n"
        f"kimdb.get_file = lambda *a, **k: {str(raw)!r}\n"
        "(kx, ky), (kxt, kyt) = kimdb.load_data(num_words=5000)\n"
        "x, y, xt, yt = datasets_text.read_imdb_npz(datasets_text.imdb_cache_file(), 5000)\n"
        "res['same_as_keras'] = ([list(s) for s in x] == [list(s) for s in kx] and (y == ky).all()\n"
        "                        and [list(s) for s in xt] == [list(s) for s in kxt] and bool((yt == kyt).all()))\n"
        "seqs = [np.arange(1, n + 1, dtype=np.int32) for n in (0, 3, 12)]\n"
        "res['pad'] = bool((datasets_text.pad_reviews(seqs, 5) == keras.utils.pad_sequences(seqs, maxlen=5)).all())\n"
        "print('JSON' + json.dumps(res, default=str))\n")
    res = json.loads(out.split("JSON", 1)[1])
    assert res["bilstm_imdb-"] == [2_658_945, [1]] and get("bilstm_imdb").expected_params == 2_658_945
    assert res["lstm_textgen-"] == [102_585, [57]] and get("lstm_textgen").expected_params == 102_585
    assert res["fasttext_imdb-1"] == [20000 * 50 + 51, [1]] and res["rows-1"] == 20000
    f = np.load(raw, allow_pickle=True)
    rows = 5000 + 1 + len(source_bigrams(f["x_train"], 5000))
    assert res["rows-2"] == rows and res["fasttext_imdb-2"] == [rows * 50 + 51, [1]]
    assert res["same_as_keras"] is True and res["pad"] is True
    auto, generic = res["auto"], res["generic"]
    assert auto["lstm_use_cudnn"] == "auto" and auto["cudnn_args_ok"] is True and auto["cudnn_possible"] is False
    assert auto["lstm_kernel"].startswith("generic (CPU)") and auto["lstm_layers"] == 2
    assert generic["lstm_use_cudnn"] is False and generic["lstm_kernel"].startswith("generic (CPU): Keras RNN loop")
    assert "lstm_impl='cudnn'" in res["cudnn_error"]


_LSTM_AUTO = script(
    "lstm_auto_jax", "jax",
        "import json, keras\n"
        "from helpers.workloads import get, lstm\n"
        "res = {}\n"
        "for policy in ('float32', 'mixed_bfloat16'):\n"
        "    keras.mixed_precision.set_global_policy(policy)\n"
        "    p = {**get('lstm_textgen').defaults, 'seed': 0, 'data_source': 'synthetic'}\n"
        "    res[policy] = lstm.describe_lstm(get('lstm_textgen').build(p), p)\n"
        "    try:\n"
        "        lstm._lstm(8, {'lstm_impl': 'cudnn'})\n"
        "    except ValueError as e:\n"
        "        res[policy + '-cudnn'] = str(e)\n"
        "print('JSON' + json.dumps(res, default=str))\n")  # in JAX's chunk of scripts


@pytest.mark.skipif("jax" not in INSTALLED, reason="the JAX backend is not installed")
@pytest.mark.xdist_group(script_group(_LSTM_AUTO))
def test_lstm_auto_avoids_jax_cudnn_under_bfloat16(workload_runs):
    """jaxlib's cuDNN RNN has no bfloat16 kernel: 'auto' must take the generic loop, 'cudnn' must refuse."""
    out = workload_runs("jax").script(_LSTM_AUTO)
    res = json.loads(out.split("JSON", 1)[1])
    f32, bf16 = res["float32"], res["mixed_bfloat16"]
    assert f32["lstm_use_cudnn"] == "auto" and f32["cudnn_dtype_blocker"] is None
    assert bf16["lstm_impl"] == "auto" and bf16["lstm_use_cudnn"] is False
    assert "bfloat16" in bf16["cudnn_dtype_blocker"] and bf16["lstm_kernel"].startswith("generic (CPU)")
    # on this CPU machine 'cudnn' is refused for want of a GPU first, whatever the dtype
    assert "lstm_impl='cudnn'" in res["float32-cudnn"] and "lstm_impl='cudnn'" in res["mixed_bfloat16-cudnn"]


# ---------------------------------------------------------------- notebooks (papermill)

def _common_asserts(rec, backend, n_train, batch_size):
    assert rec["status"] == "ok" and rec["reason"] is None, rec.get("reason")
    assert rec["backend"] == backend and rec["device"] == "cpu" and rec["device_used"] == "cpu"
    assert rec["n_train"] == n_train and rec["first_epoch_s"] > 0 and len(rec["epoch_s"]) == 1
    assert rec["samples_per_s"] == pytest.approx(n_train / rec["median_epoch_s"])
    assert rec["steps_per_epoch"] == math.ceil(n_train / batch_size)
    assert len(rec["history"]["loss"]) == 2 and rec["source"] == fasttext_imdb.SOURCE


@pytest.mark.parametrize("backend", by_backend("fasttext_imdb"))
def test_fasttext_on_real_npz_with_bigrams(workload_runs, backend, tmp_path):
    raw = write_imdb_npz(tmp_path)  # the same file as the point read (support.workload_points)
    rec = workload_runs(backend)["fasttext_imdb"]
    _common_asserts(rec, backend, 96, 32)
    rows = 5000 + 1 + len(source_bigrams(np.load(raw, allow_pickle=True)["x_train"], 5000))
    assert rec["data_source"] == "real" and rec["data_info"]["embedding_rows"] == rows
    assert rec["model_params"] == rows * 50 + 51 and rec["expected_params"] is None
    assert rec["n_val"] == 16 and "val_loss" in rec["history"] and len(rec["history"]["accuracy"]) == 2


@pytest.mark.parametrize("backend", by_backend("bilstm_imdb"))
def test_bilstm_synthetic_records_the_lstm_kernel(workload_runs, backend):
    rec = workload_runs(backend)["bilstm_imdb"]
    _common_asserts(rec, backend, 64, 32)
    assert rec["data_source"] == "synthetic" and rec["model_params"] == rec["expected_params"] == 2_658_945
    info = rec["workload_info"]
    assert info["lstm_impl"] == "auto" and info["lstm_use_cudnn"] == "auto" and info["cudnn_possible"] is False
    assert info["lstm_kernel"].startswith("generic (CPU)") and info["lstm_layers"] == 2
    if backend == "torch":  # torch's backend.lstm runs its own loop on the CPU
        assert "torch backend.lstm" in info["lstm_kernel"]
    else:
        assert info["fused_probe"] is False and "Keras RNN loop" in info["lstm_kernel"]


@pytest.mark.parametrize("backend", by_backend("lstm_textgen"))
def test_textgen_on_real_text_generic_kernel(workload_runs, backend):
    rec = workload_runs(backend)["lstm_textgen"]
    _common_asserts(rec, backend, 128, 64)
    n = len(set(NIETZSCHE_SAMPLE.lower()))
    assert rec["data_source"] == "real" and rec["data_info"]["n_chars"] == n
    assert rec["model_params"] == 4 * (128 * (n + 128) + 128) + 128 * n + n
    info = rec["workload_info"]
    assert info["lstm_use_cudnn"] is False and info["lstm_kernel"].startswith("generic (CPU): Keras RNN loop")


LEARN_ON = "tensorflow" if "tensorflow" in INSTALLED else ONE
_LEARN = script(
    "text_learnable", LEARN_ON,
        "import json\n"
        "import keras\n"
        "from helpers.workloads import get\n"
        "keras.utils.set_random_seed(0)\n"
        "res = {}\n"
        "for name, kw in [('fasttext_imdb', dict(ngram_range=1, n_train=2000, epochs=3)),\n"
        "                 ('bilstm_imdb', dict(n_train=1000, maxlen=25, epochs=3)),\n"
        "                 ('lstm_textgen', dict(n_train=4000, maxlen=10, epochs=4))]:\n"
        "    p = {**get(name).defaults, **kw, 'data_source': 'synthetic', 'seed': 0}\n"
        "    d = get(name).load(p)\n"
        "    m = get(name).build(p)\n"
        "    m.compile(**get(name).compile_args(p))\n"
        "    h = m.fit(d.x_train, d.y_train, batch_size=p['batch_size'], epochs=p['epochs'], verbose=0)\n"
        "    res[name] = h.history\n"
        "print('JSON' + json.dumps(res))\n", chunk="scripts")  # a chunk of its own: 25 s of training


@pytest.mark.xdist_group(script_group(_LEARN))
def test_synthetic_data_is_learnable(workload_runs):
    res = json.loads(workload_runs(LEARN_ON).script(_LEARN).split("JSON", 1)[1])
    for name, h in res.items():
        assert h["loss"][-1] < h["loss"][0], (name, h)
    assert res["fasttext_imdb"]["accuracy"][-1] > 0.6, res["fasttext_imdb"]  # chance: 0.5
    assert res["bilstm_imdb"]["accuracy"][-1] > 0.75, res["bilstm_imdb"]
    assert res["lstm_textgen"]["loss"][-1] < 2.5, res["lstm_textgen"]  # uniform over 57 characters: 4.04
