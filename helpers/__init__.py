"""cpu-gpu-bench: helpers for the CPU-versus-GPU Keras training report suite.

Importing this package imports no deep-learning framework: the device and backend must be
forced through environment variables (``helpers.point.device.force``) *before* ``import keras``.
Heavy imports happen inside functions.

Modules:
    paths        project paths (one place; never the working directory)
    params       the notebook parameters: defaults, allowed values, validation
    grid         grid YAML loading, validation and expansion into points
    device       force backend/device/threads through the environment; verify the device used
    data         datasets: the Keras loaders when cached or reachable, else learnable synthetic data
    datasets_images  MNIST and ImageNet-shaped data;  datasets_text  IMDb and Nietzsche (+ synthetic)
    images       image folders (class sub-folders), PIL decoding, augmentation, the plan (no framework)
    image_sequence  the augmenting keras.utils.PyDataset and image_dataset(plan) (imports Keras: only
                 after forcing the device; it uses images, never the reverse)
    workloads    the workload registry: model builder + data loader per workload name
    timing       the epoch timing callback (first epoch apart, steady state, spread)
    sampler      the utilisation sampler (psutil; NVML when an NVIDIA GPU is present)
    fingerprint  the environment fingerprint
    record       the record: point id, keys, atomic writer, reader
    runner       the grid runner (papermill API, one fresh kernel per point)
    kernel_launcher  the kernel the runner starts (its stderr goes to a log beside the notebook)
    report       the summary: tidy table and charts from records; HTML rendering
"""

__version__ = "0.1.0"
