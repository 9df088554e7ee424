"""``batchnorm_stats``: whose batch a BatchNormalization layer normalises by when a point trains on several devices.

Keras' ``DataParallel`` on JAX compiles one program over the global batch (sharded over the devices), so a
``BatchNormalization`` layer's mean and variance are those of the *global* batch (``batchnorm_stats: global``,
the default): every such layer all-reduces its statistics across the devices in the forward pass and again in the
backward pass, small collectives on the step's critical path (ResNet-50: 53 layers, 106 all-reduces a step; on
four H100s 4.7 ms of a 52-ms step, the whole gap from linear scaling: reference/h100x4/README.md).

``batchnorm_stats: per_device`` normalises each device's part of the batch by its own statistics, as PyTorch's
``DistributedDataParallel`` does (and Lambda's and MLPerf's ResNet-50 with it): the batch, sharded over D devices,
is viewed as D groups, and the moments are taken within each group, so no statistic crosses a device inside the
step. The moving averages (used at inference) take the mean of the D groups' statistics, updated off the critical
path. Same layers, same weights, same parameter count; on one device the two are the same computation.

    convert(model, groups)   # every BatchNormalization of the model normalised per group (one a device)
"""

from __future__ import annotations

CHOICES = ("global", "per_device")


def mesh_devices() -> int:
    """The devices the batch is sharded over (1 without a distribution)."""
    import keras

    dist = keras.distribution.distribution()
    if dist is None:
        return 1
    return int(dist.device_mesh.shape[0])


def _per_group_class():
    import keras
    from keras import ops

    base = keras.layers.BatchNormalization

    class PerDeviceBatchNormalization(base):
        """``BatchNormalization`` whose training statistics are those of each of ``_groups`` equal parts of the
        batch (one a device: ``helpers.point.batchnorm``)."""

        _groups = 1

        def call(self, inputs, training=None, mask=None):
            g = int(self._groups)
            ndim = len(inputs.shape)
            axis = self.axis if self.axis >= 0 else ndim + self.axis
            if (not (training and self.trainable) or g <= 1 or mask is not None or self.renorm
                    or axis != ndim - 1 or inputs.shape[0] is None or inputs.shape[0] % g):
                return super().call(inputs, training=training, mask=mask)
            x = ops.cast(inputs, keras.backend.result_type(inputs.dtype, "float32"))
            shape = tuple(x.shape)
            xg = ops.reshape(x, (g, shape[0] // g) + shape[1:])
            red = tuple(range(1, ndim))  # within a group: its samples and every axis but the channels
            mean = ops.mean(xg, axis=red, keepdims=True)
            var = ops.mean(ops.square(xg - mean), axis=red, keepdims=True)
            m = self.momentum
            flat = (shape[-1],)
            self.moving_mean.assign(ops.cast(self.moving_mean, x.dtype) * m
                                    + ops.reshape(ops.mean(mean, axis=0), flat) * (1.0 - m))
            self.moving_variance.assign(ops.cast(self.moving_variance, x.dtype) * m
                                        + ops.reshape(ops.mean(var, axis=0), flat) * (1.0 - m))
            y = (xg - mean) * ops.rsqrt(var + self.epsilon)
            if self.scale:
                y = y * ops.cast(self.gamma, x.dtype)
            if self.center:
                y = y + ops.cast(self.beta, x.dtype)
            return ops.cast(ops.reshape(y, shape), self.compute_dtype)

    return PerDeviceBatchNormalization


_CLASS = None


def convert(model, groups: int) -> int:
    """Every ``BatchNormalization`` of ``model`` (nested models too) normalised per group of the batch (``groups``
    equal parts, one a device); returns how many layers. With ``groups`` 1 nothing changes."""
    global _CLASS
    import keras

    if groups <= 1:
        return 0
    if _CLASS is None:
        _CLASS = _per_group_class()
    n = 0
    for layer in model._flatten_layers(include_self=False, recursive=True):
        if type(layer) is keras.layers.BatchNormalization:
            layer.__class__ = _CLASS
            layer._groups = groups
            n += 1
    return n
