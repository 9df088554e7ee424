"""What the two IMDb workloads of seed 002 share (``bilstm_imdb``, ``fasttext_imdb``): the source scripts'
compile call and the vocabulary knob. The corpus itself is ``helpers.data.text_sets``'s."""

from __future__ import annotations

from ..params import Param


def adam_bce(params: dict) -> dict:
    # both sources: compile('adam', 'binary_crossentropy', metrics=['accuracy']) (Keras defaults)
    return {"optimizer": "adam", "loss": "binary_crossentropy", "metrics": ["accuracy"]}


IMDB_KNOBS = {
    "max_features": Param("max_features", int, "vocabulary: the most frequent words kept (source: 20000)",
                          minimum=4,
        note="most frequent words kept (the source: 20000)"),
}


# the parameters cell's comments the IMDb workloads share (each adds its own: epochs, maxlen, ...)
IMDB_NOTES = {
    "batch_size": "reviews per step (the source: 32)",
    "n_train": "training reviews (None: all 25,000, as in the source)",
    "n_val": "test reviews evaluated each epoch (the source: all 25,000; 0: none)",
    "data_source": "auto: real IMDb if cached or reachable, else synthetic; or real / synthetic",
    "seed": "(data subset, synthetic data, weights)",
}
