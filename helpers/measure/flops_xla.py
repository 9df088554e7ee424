"""XLA's own count of a compiled training step (JAX backend): the cross-check of the analytical count.

    xla_train_step(model, x, y)               # JAX only: XLA's count of the compiled train step

The cross-check (``xla_train_step``, JAX): XLA's cost analysis of the jitted ``train_step`` (forward,
backward, update, loss and metrics), divided by the batch size. It differs from the convention in known
ways: XLA does not compute the gradient of the model's input (the first weighted layer's backward is 1 x
its forward: ``Count.input_grad``), it leaves out a 'same' convolution's products with the zero padding (the
convention counts them, as the published ResNet-50 figure does: XLA's count of it is lower), and it counts
every elementwise op (loss, metrics, random numbers, optimiser) at its own rate. ``Count.exact(batch_size)``
is the convention less that input gradient: the figure to compare with XLA. XLA counts a loop's body once
(a JAX scan): ``xla_train_step`` unrolls recurrent layers first.
"""

from __future__ import annotations


def _rnn_layers(model):
    out = []
    for layer in model._flatten_layers(include_self=False, recursive=True):
        if hasattr(layer, "unroll") and hasattr(layer, "cell"):
            out.append(layer)
    return out


def xla_train_step(model, x, y, stage: str = "auto", unroll: bool = True) -> dict:
    """XLA's cost analysis of the compiled model's stateless ``train_step`` on a batch shaped like ``x``/``y``
    (JAX backend only; arrays or anything with ``shape`` and ``dtype``). Returns ``flops`` (the step),
    ``per_sample``, ``transcendentals``, ``stage`` ('compiled': the optimised HLO; 'lowered': before XLA's
    passes, faster; 'auto': compiled, but lowered for a model with recurrent layers, whose unrolled step takes
    minutes to compile on a CPU). Recurrent layers are unrolled first (``unroll``): XLA counts a loop's body once."""
    import jax
    import keras

    if keras.backend.backend() != "jax":
        raise RuntimeError(f"XLA cost analysis needs the JAX backend, not {keras.backend.backend()}")
    rnn = _rnn_layers(model) if unroll else []
    if stage == "auto":
        stage = "lowered" if rnn else "compiled"
    saved = [layer.unroll for layer in rnn]
    try:
        for layer in rnn:
            layer.unroll = True
        model._symbolic_build(data_batch=(x, y, None))  # builds optimiser and metrics, as fit does
        state = model._get_jax_state(trainable_variables=True, non_trainable_variables=True,
                                     optimizer_variables=True, metrics_variables=True)

        def spec(a):
            return jax.ShapeDtypeStruct(tuple(a.shape), a.dtype)

        lowered = jax.jit(model.train_step).lower(jax.tree.map(spec, state), (spec(x), spec(y), None))
        ca = lowered.compile().cost_analysis() if stage == "compiled" else lowered.cost_analysis()
    finally:
        for layer, u in zip(rnn, saved):
            layer.unroll = u
    ca = ca[0] if isinstance(ca, (list, tuple)) else ca
    batch = int(x.shape[0])
    flops = float(ca.get("flops", 0.0))
    return {"flops": flops, "per_sample": flops / batch, "transcendentals": float(ca.get("transcendentals", 0.0)),
            "batch_size": batch, "stage": stage}
