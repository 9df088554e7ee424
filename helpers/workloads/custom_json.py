"""custom (1 of 4, its JSON): a ``.keras`` member's JSON parsed within bounds on what the parse makes (values,
nesting), not only on its bytes, and the model config walked without recursion, each in one pass.

    cfg = parse(data, "config.json")   # ValueError: too many JSON values, nested too deeply, unreadable
    customs, lambdas = scan(cfg)       # ['package>Name', ...]: what Keras cannot find by itself; the layers
                                       # holding Python code (Keras' safe mode refuses them)
    keras_packages(cfg)                # {'keras_nlp': ['keras_nlp.layers.x', ...]}: modules Keras would import
    check_installed(keras_packages(cfg))   # ValueError unless each package is the environment's installed one

Imported by ``custom_files``; imports nothing of the suite (``check_installed`` looks packages up, never imports
them).
"""

from __future__ import annotations

import importlib.machinery
import json
import site
import sys
import sysconfig
from pathlib import Path

# json.loads makes ~35-70 bytes of Python objects of each value ([{}, {}, ...] at 3 bytes a value: 16 MB became
# ~400 MB, the parse of each file cached). Real configs hold ~9.4 bytes a value: ResNet-152 has 52,454 values
# (495 kB), NASNetLarge, the largest of keras.applications, 107,382 (1.0 MB): the bound is what 16 MB of a real
# config holds, ~19 times NASNetLarge's, so only a config denser than any model's is refused; parsing one within
# it makes at most ~150 MB, dropped once its summary is taken (custom_files caches the summary only).
MAX_VALUES = 2_000_000
MAX_DEPTH = 100  # a Sequential's config is 7 deep, a Functional's 10-11, each model nested in another 3 more


def parse(data: bytes, name: str):
    """``json.loads(data)``, refused (``ValueError``, the reason) before the parse where it would make more than
    ``MAX_VALUES`` objects, and after it where it nests deeper than ``MAX_DEPTH``."""
    # every value but the first follows a '[', '{', ',' or ':' (an upper bound: those inside strings count too)
    n = 1 + sum(data.count(c) for c in b"[{,:")
    if n > MAX_VALUES:
        raise ValueError(f"has a {name} of up to {n:,} JSON values (counted by its '[', '{{', ',' and ':'), more than "
                         f"{MAX_VALUES:,} (NASNetLarge's has 107,382): not a model config")
    try:
        doc = json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"has an unreadable {name} ({str(exc)[:200]})") from None
    except RecursionError:
        raise ValueError(f"has a {name} nested too deeply to be a model config") from None
    level, depth = [doc], 0
    while level:  # one level at a time: no recursion, C loops
        depth += 1
        if depth > MAX_DEPTH:
            raise ValueError(f"has a {name} nested more than {MAX_DEPTH} levels deep (a model's is 7 to 11, "
                             "3 more a nested model): not a model config")
        inner = []
        for node in level:
            inner += node.values() if type(node) is dict else node
        level = [v for v in inner if type(v) is dict or type(v) is list]
    return doc


def walk(node) -> list[dict]:
    """Every dict under ``node`` (itself included), in document order, without recursion."""
    out, stack = [], [node]
    while stack:
        n = stack.pop()
        if type(n) is dict:
            out.append(n)
            stack += reversed(n.values())
        elif type(n) is list:
            stack += reversed(n)
    return out


def scan(cfg: dict) -> tuple[list[str], list[str]]:
    """The model config's custom objects and its layers holding lambdas (``custom_objects``, ``lambda_layers``),
    from one walk."""
    dicts = walk(cfg.get("config"))
    odd = any(d.get("class_name") in ("Lambda", "__lambda__") for d in dicts)
    return custom_objects(dicts), lambda_layers(cfg) if odd else []


def custom_objects(dicts: list[dict]) -> list[str]:
    """Objects of the model config (``walk(cfg["config"])``) Keras cannot find by itself: classes from outside
    Keras, registered functions ('package>name')."""
    out = []
    for d in dicts:
        if "class_name" not in d or "module" not in d:
            continue
        mod, reg, cls = d.get("module"), d.get("registered_name"), d.get("class_name")
        if cls == "function" and mod == "builtins":
            if isinstance(d.get("config"), str) and ">" in d["config"]:
                out.append(d["config"])
        elif cls not in ("__keras_tensor__", "__lambda__") and (mod is None or not str(mod).startswith("keras")):
            out.append(reg if isinstance(reg, str) else cls if isinstance(cls, str) else repr(cls)[:100])
    return list(dict.fromkeys(out))


def lambda_layers(cfg: dict) -> list[str]:
    """Names of the layers holding Python code Keras does not load in safe mode: Lambda layers, and any layer
    with a lambda inside its config (a Dense whose activation is a lambda: ``__lambda__``). One pass: each
    value is visited with the chain of layers whose config holds it, and a lambda names that chain's layers."""
    out, stack = set(), [(cfg.get("config"), None)]
    while stack:
        node, chain = stack.pop()  # chain: [label, the enclosing chain, named already] or None
        if isinstance(node, list):
            stack.extend((v, chain) for v in node)
            continue
        if not isinstance(node, dict):
            continue
        if node.get("class_name") == "__lambda__":
            while chain is not None and not chain[2]:
                out.add(chain[0])
                chain[2], chain = True, chain[1]
        c = node.get("config")
        if "class_name" in node and isinstance(c, dict) and "layers" not in c:
            name = str(c.get("name", "?"))
            if node["class_name"] == "Lambda":
                out.add(name)
            label = name if node["class_name"] == "Lambda" else f"{name} ({node['class_name']})"
            inner = [label, chain, False]
            stack.extend((v, inner if k == "config" else chain) for k, v in node.items())
        else:
            stack.extend((v, chain) for v in node.values())
    return sorted(out)


# Keras' deserializer imports the module an object's config names (``importlib.import_module(module)``, safe mode or
# not) where its package is one of these (keras itself is imported already, from the environment)
KERAS_PACKAGES = ("keras_hub", "keras_nlp", "keras_cv")


def keras_packages(cfg) -> dict[str, list[str]]:
    """The modules of ``KERAS_PACKAGES`` the whole config (model, layers, compile config) names, by package: Keras
    imports each while loading the model, wherever Python finds its package."""
    out: dict = {}
    for d in walk(cfg):
        mod = d.get("module")
        if isinstance(mod, str) and mod.split(".", 1)[0] in KERAS_PACKAGES:
            out.setdefault(mod.split(".", 1)[0], [])
            if mod[:200] not in out[mod.split(".", 1)[0]]:
                out[mod.split(".", 1)[0]].append(mod[:200])
    return out


def _site_dirs() -> list[Path]:
    """The environment's package folders (site-packages): where an installed package lives."""
    dirs = {sysconfig.get_paths().get(k) for k in ("purelib", "platlib")}
    dirs.update(getattr(site, "getsitepackages", list)())
    return [Path(d).resolve() for d in dirs if d]


def check_installed(packages: dict) -> None:
    """``ValueError`` unless each of ``packages`` (``custom_json.keras_packages``: Keras would import a module of it
    while loading the model) is the one installed in this environment, not a folder of the same name that Python
    would find first (beside the model, in the current directory, on PYTHONPATH). Looked up, never imported."""
    for top, mods in packages.items():
        if top in sys.modules:  # imported already: its modules are found in its own folder
            continue
        spec = importlib.machinery.PathFinder.find_spec(top, sys.path)
        where = (spec.origin if spec is not None and spec.origin not in (None, "namespace") else
                 next(iter(spec.submodule_search_locations or []), None) if spec is not None else None)
        if where and any(Path(where).resolve().is_relative_to(d) for d in _site_dirs()):
            continue
        found = f"; Python would import it from {where}" if where else ""
        more = f" and {len(mods) - 1} more" if len(mods) > 1 else ""
        raise ValueError(f"names the module {mods[0]!r}{more} of the package {top}, which Keras imports while loading "
                         f"a model, and {top} is not installed in this environment{found}: refused (a folder of that "
                         f"name beside a model runs its code); install it (pip install {top.replace('_', '-')}) or "
                         "save the model without its layers")
