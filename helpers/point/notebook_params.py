"""A point's parameters from a workload notebook's namespace (what papermill injected), validated before anything runs.

    params = collect(globals())   # begin's first step (helpers.point.session)
"""

from __future__ import annotations

from types import ModuleType

from helpers import params as _params
from helpers import workloads as _workloads
from helpers.point import distribution_params as _distribution

# Names IPython puts in a notebook's namespace: not parameters.
_IPYTHON_NAMES = {"In", "Out", "get_ipython", "exit", "quit", "open"}


def collect(namespace: dict) -> dict:
    """The parameters from a notebook namespace; an unknown injected name is an error.

    papermill injects parameters as assignments: a typo'd name would otherwise be silently ignored.
    """
    workload = namespace.get("workload")
    if workload not in _workloads.REGISTRY:
        _params.validate({"workload": workload}, "notebook parameters",
                         workloads=_workloads.names())
    spec = _workloads.knobs(workload)
    unknown = {k: v for k, v in namespace.items()
               if not k.startswith("_") and k not in _IPYTHON_NAMES and k not in spec
               and not isinstance(v, ModuleType) and not callable(v)}
    params = {k: namespace[k] for k in spec if k in namespace}
    _params.validate({**params, **unknown}, "notebook parameters", spec=spec,
                     workloads=_workloads.names())
    missing = [k for k in spec if k not in params]
    if missing:
        raise _params.ParamError(f"notebook parameters: missing keys {missing}")
    _distribution.check(params, "notebook parameters", host_devices=_distribution.host_devices_allowed())
    return params
