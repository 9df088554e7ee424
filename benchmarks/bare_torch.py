"""A bare PyTorch training loop: the other "best bare loop" reference.

    python benchmarks/bare_torch.py vgg_cifar10 --batch 512 --precision float32 --steps 64 --epochs 3
    python benchmarks/bare_torch.py resnet50 --batch 256 --precision mixed_bfloat16 --device gpu
    python benchmarks/bare_torch.py resnet50 --cpu-smoke        # tiny: 64 x 64, batch 8, 2 steps, eager

Models: ``vgg_cifar10`` is the layer list of ``helpers/workloads/vgg_cifar10.py`` without
augmentation in ``torch.nn`` (1,250,858 parameters), RMSprop (alpha 0.9, eps 1e-7, lr 1e-4);
``resnet50`` is ``torchvision.models.resnet50(weights=None)`` (v1.5, 25,557,032 parameters; the same
network written here when torchvision is missing, or with ``--own-resnet``), SGD momentum 0.9, lr 0.1.
Batch norm in training mode. ``channels_last`` memory format, ``cudnn.benchmark`` on,
``torch.compile`` (mode default) of the model unless ``--no-compile``; ``mixed_bfloat16`` is
``torch.autocast(dtype=torch.bfloat16)`` around the forward pass and the loss (float32 parameters and
optimiser). TF32 is left at PyTorch's defaults (cuDNN convolutions may use it, matmuls do not) unless
``--tf32``. Data: ``--distinct`` synthetic batches put on the device once, cycled. Timing:
``--warmup`` steps (compilation, autotuning) then, ``--epochs`` times, ``--steps`` steps closed by
``torch.cuda.synchronize()``; samples/s is the median over those chunks. Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path


def vgg(classes: int, size: int):
    from torch import nn

    s = ((size - 2) // 2 - 2) // 2
    return nn.Sequential(
        nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(inplace=True),
        nn.Conv2d(32, 32, 3), nn.ReLU(inplace=True),
        nn.MaxPool2d(2), nn.Dropout(0.25),
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(inplace=True),
        nn.Conv2d(64, 64, 3), nn.ReLU(inplace=True),
        nn.MaxPool2d(2), nn.Dropout(0.25),
        nn.Flatten(),
        nn.Linear(64 * s * s, 512), nn.ReLU(inplace=True), nn.Dropout(0.5),
        nn.Linear(512, classes),
    )


def own_resnet50(classes: int):
    """torchvision's resnet50 (v1.5: stride in the 3x3 convolution), written out."""
    from torch import nn

    class Bottleneck(nn.Module):
        def __init__(self, cin, width, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, width, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(width)
            self.conv2 = nn.Conv2d(width, width, 3, stride, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(width)
            self.conv3 = nn.Conv2d(width, 4 * width, 1, bias=False)
            self.bn3 = nn.BatchNorm2d(4 * width)
            self.relu = nn.ReLU(inplace=True)
            self.downsample = None
            if stride != 1 or cin != 4 * width:
                self.downsample = nn.Sequential(nn.Conv2d(cin, 4 * width, 1, stride, bias=False),
                                                nn.BatchNorm2d(4 * width))

        def forward(self, x):
            idt = x if self.downsample is None else self.downsample(x)
            y = self.relu(self.bn1(self.conv1(x)))
            y = self.relu(self.bn2(self.conv2(y)))
            y = self.bn3(self.conv3(y))
            return self.relu(y + idt)

    layers = [nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(inplace=True),
              nn.MaxPool2d(3, 2, 1)]
    cin = 64
    for width, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
        for b in range(blocks):
            layers.append(Bottleneck(cin, width, stride if b == 0 else 1))
            cin = 4 * width
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, classes)]
    return nn.Sequential(*layers)


def resnet50(classes: int, own: bool):
    if not own:
        try:
            import torchvision

            return torchvision.models.resnet50(weights=None, num_classes=classes), "torchvision"
        except ImportError:
            pass
    return own_resnet50(classes), "own (torchvision layout)"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("workload", choices=("resnet50", "vgg_cifar10"))
    ap.add_argument("--batch", type=int, default=None, help="default: vgg_cifar10 512, resnet50 256")
    ap.add_argument("--precision", choices=("float32", "mixed_bfloat16"), default="float32")
    ap.add_argument("--image-size", type=int, default=None, help="default: vgg_cifar10 32, resnet50 224")
    ap.add_argument("--classes", type=int, default=None, help="default: vgg_cifar10 10, resnet50 1000")
    ap.add_argument("--steps", type=int, default=20, help="steps per timed chunk ('epoch')")
    ap.add_argument("--epochs", type=int, default=3, help="timed chunks; samples/s is their median")
    ap.add_argument("--warmup", type=int, default=5, help="untimed steps first (compilation, autotuning)")
    ap.add_argument("--distinct", type=int, default=4, help="distinct synthetic batches kept on the device")
    ap.add_argument("--device", choices=("auto", "cpu", "gpu"), default="auto",
                    help="auto: CUDA when available; gpu fails without CUDA")
    ap.add_argument("--no-compile", action="store_true", help="eager: no torch.compile")
    ap.add_argument("--no-channels-last", action="store_true")
    ap.add_argument("--tf32", action="store_true", help="allow TF32 matmuls too (default: PyTorch's)")
    ap.add_argument("--own-resnet", action="store_true", help="the ResNet-50 written here, not torchvision's")
    ap.add_argument("--record", default="", metavar="FILE",
                    help="also append the result to FILE, named bare_loops.jsonl, in the run's folder (the report "
                         "sets it beside the suite's ladder: helpers/report/load/bare.py)")
    ap.add_argument("--cpu-smoke", action="store_true",
                    help="tiny run on the CPU: images 32 (vgg) / 64 (resnet), batch 8, 2 steps x 2, eager")
    args = ap.parse_args(argv)
    if args.cpu_smoke:
        args.batch = args.batch or 8
        args.image_size = args.image_size or (32 if args.workload == "vgg_cifar10" else 64)
        args.steps, args.epochs, args.warmup, args.distinct = 2, 2, 1, 2
        args.device = "cpu"
        args.no_compile = True
    big = args.workload == "resnet50"
    batch = args.batch if args.batch is not None else (256 if big else 512)
    size = args.image_size if args.image_size is not None else (224 if big else 32)
    classes = args.classes if args.classes is not None else (1000 if big else 10)

    import torch
    import torch.nn.functional as F

    if args.device == "gpu" and not torch.cuda.is_available():
        raise SystemExit("error: --device gpu asked but torch.cuda.is_available() is False")
    cuda = args.device != "cpu" and torch.cuda.is_available()
    dev = torch.device("cuda" if cuda else "cpu")
    torch.manual_seed(0)
    torch.backends.cudnn.benchmark = True
    if args.tf32:
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    source = "cifar10_cnn.py in torch.nn, no augmentation"
    if big:
        model, source = resnet50(classes, args.own_resnet)
        opt_cls, opt_kw = torch.optim.SGD, {"lr": 0.1, "momentum": 0.9}
    else:
        model = vgg(classes, size)
        opt_cls, opt_kw = torch.optim.RMSprop, {"lr": 1e-4, "alpha": 0.9, "eps": 1e-7}
    fmt = torch.contiguous_format if args.no_channels_last else torch.channels_last
    model = model.to(dev, memory_format=fmt).train()
    n_params = sum(p.numel() for p in model.parameters())
    opt = opt_cls(model.parameters(), **opt_kw)
    fwd = model if args.no_compile else torch.compile(model)
    amp = args.precision == "mixed_bfloat16"
    g = torch.Generator(device="cpu").manual_seed(0)
    xs = [torch.rand((batch, 3, size, size), generator=g).to(dev, memory_format=fmt) for _ in range(args.distinct)]
    ys = [torch.randint(0, classes, (batch,), generator=g).to(dev) for _ in range(args.distinct)]

    def step(x, y):
        opt.zero_grad(set_to_none=True)
        with torch.autocast(device_type=dev.type, dtype=torch.bfloat16, enabled=amp):
            out = fwd(x)
            loss = F.cross_entropy(out.float(), y)
        loss.backward()
        opt.step()
        return loss

    def sync():
        if cuda:
            torch.cuda.synchronize()

    args.warmup = max(1, args.warmup)
    t0 = time.perf_counter()
    i = 0
    for _ in range(args.warmup):
        loss = step(xs[i % args.distinct], ys[i % args.distinct])
        i += 1
        if i == 1:
            sync()
            first = time.perf_counter() - t0
    sync()
    warm = time.perf_counter() - t0
    chunk_s = []
    for _ in range(args.epochs):
        t0 = time.perf_counter()
        for _ in range(args.steps):
            loss = step(xs[i % args.distinct], ys[i % args.distinct])
            i += 1
        sync()
        chunk_s.append(time.perf_counter() - t0)
    med = statistics.median(chunk_s)
    result = {"impl": "bare-torch", "workload": args.workload, "precision": args.precision,
              "batch": batch, "samples_per_s": batch * args.steps / med, "step_s": med / args.steps,
              "chunk_s": chunk_s, "steps_per_chunk": args.steps, "image_size": size, "classes": classes,
              "model_params": n_params, "model": source, "compiled": not args.no_compile,
              "channels_last": not args.no_channels_last, "first_step_s": first, "warmup_s": warm,
              "final_loss": float(loss.item()), "device_used": "gpu" if cuda else "cpu",
              "device": torch.cuda.get_device_name(0) if cuda else "cpu", "torch": torch.__version__,
              **_tf32(torch)}
    print(json.dumps(result))
    if args.record:  # beside the run's records: the report's limit section reads it
        sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
        from helpers.report.load.bare import append

        where = append(args.record, result, gpu=torch.cuda.get_device_name(0) if cuda else None)
        print(f"recorded in {where}", file=sys.stderr)


def _tf32(torch) -> dict:
    try:
        return {"tf32_matmul": bool(torch.backends.cuda.matmul.allow_tf32),
                "tf32_cudnn": bool(torch.backends.cudnn.allow_tf32)}
    except Exception as exc:  # newer PyTorch may refuse the legacy flags once the new API was used
        return {"tf32": f"unknown ({type(exc).__name__})"}


if __name__ == "__main__":
    main()
