"""Where a cold start's compile time goes: single PyTensor ops and whole model graphs.

Issue 24, point 1 (the numbers quoted in ``time_to_posterior.md``'s notes).  Every case is
one **fresh process** with empty PyTensor and Numba caches (``worker_env``); CPU seconds of
that process.

``ops``     one PyTensor function per op under the default (Numba) backend: a full ``Sum``
            of a (4, 49) matrix, of the same 196 values as a vector, and a 0-d -> 2-d
            ``Alloc`` -- the ops the count kernels' old broadcasting put in a gradient.
``models``  ``model.logp_dlogp_function()`` of a ``time_to_posterior`` model: the rewrites
            (``compile``) and the first call (Numba's JIT of the graph), with the logp and
            gradient at the initial point, so that two trees can be compared.
``jax``     the README model under JAX as numpyro runs it: ``build`` = PyMC's
            ``get_jaxified_logp``, ``first call`` = a jitted ``value_and_grad`` at the
            initial point.
``first-use``  the README model's first logp + gradient under the default (Numba) backend,
            noise-aware and naive, each from empty caches (``cold``) and then again in a
            second fresh process with the caches the first one filled (``warm``): the
            noise-aware cold row minus its warm row is the first-use compile of the
            clipped-normal kernel and of the graph around it (Numba's ``cache=True`` keeps
            the kernel for every later process).  Written to ``first_use_compile.md``.

Run: ``.venv/bin/python benchmarks/cold_compile_parts.py`` (``--tree DIR`` measures the package
of another checkout, e.g. a ``git archive`` of an older commit, for the models; ``--label``
names it in the table; ``--append`` keeps the rows of the last run; ``--models readme,counts``
picks the ``time_to_posterior`` models; ``--cases first-use`` the first-use table).
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
NAME = "cold_compile_parts"
OPS = ("sum_2d", "sum_1d", "alloc_0d_to_2d")
MODELS = ("counts", "truncated-sum", "regression")


def cpu():
    s = resource.getrusage(resource.RUSAGE_SELF)
    return s.ru_utime + s.ru_stime


def op_case(kind: str) -> dict:
    import numpy as np
    import pytensor
    import pytensor.tensor as pt

    if kind == "sum_2d":
        x, val = pt.dmatrix("x"), np.ones((4, 49))
        out = pt.sum(x)
    elif kind == "sum_1d":
        x, val = pt.dvector("x"), np.ones(196)
        out = pt.sum(x)
    else:
        x, val = pt.dscalar("x"), 1.0
        out = pt.alloc(x, 4, 49)
    t0 = cpu()
    f = pytensor.function([x], out)
    t1 = cpu()
    f(val)
    t2 = cpu()
    return {"compile": t1 - t0, "first_call": t2 - t1}


def _timings(t0, t1, t2, logp, grad):
    """A case's row: CPU seconds to build (t0 -> t1) and of the first call (t1 -> t2), and the
    values, which show that every tree computes the same thing."""
    import numpy as np

    return {
        "compile": t1 - t0,
        "first_call": t2 - t1,
        "logp": float(logp),
        "grad": [float(g) for g in np.ravel(grad)],
    }


def model_case(model: str, noise_aware: bool = True) -> dict:
    import numpy as np

    sys.path.insert(0, str(HERE))
    from time_to_posterior import build

    m = build(model, noise_aware)
    t0 = cpu()
    f = m.logp_dlogp_function(ravel_inputs=True)
    f.set_extra_values({})
    t1 = cpu()
    ip = m.initial_point()
    x = np.concatenate([np.atleast_1d(ip[v.name]).ravel() for v in f._grad_vars])
    logp, grad = f(x)
    return _timings(t0, t1, cpu(), logp, grad)


def jax_case(model: str) -> dict:
    import jax
    import numpy as np
    from pymc.sampling.jax import get_jaxified_logp

    sys.path.insert(0, str(HERE))
    from time_to_posterior import build

    m = build(model, True)
    t0 = cpu()
    logp = get_jaxified_logp(m)
    t1 = cpu()
    ip = m.initial_point()
    x = [np.asarray(ip[v.name]) for v in m.value_vars]
    value, grad = jax.jit(jax.value_and_grad(lambda xs: logp(xs)))(x)
    return _timings(t0, t1, cpu(), value, grad)


def run(spec: dict, tree: Path | None, times: int = 1) -> list[dict]:
    """``times`` fresh processes in a row sharing one compile cache, empty for the first."""
    sys.path.insert(0, str(HERE))
    from _common import run_worker, worker_env

    out = []
    with tempfile.TemporaryDirectory(prefix="ccp_") as cache:
        env = worker_env(cache)
        if tree is not None:
            env["PYTHONPATH"] = str(tree) + ":" + env["PYTHONPATH"]
        for _ in range(times):
            res, err = run_worker(__file__, spec, env)
            err_row = {"error": (str(err).strip().splitlines() or ["?"])[-1][:300]}
            out.append(res if err is None else err_row)
    return out


def first_use(args, info, t_start):
    """The README model's first logp + gradient, noise-aware and naive, cold then warm."""
    from _common import md_table, write_results

    rows = []
    for kind, label in (("model", "noise-aware"), ("naive", "naive")):
        runs = run({"kind": kind, "case": "readme"}, args.tree, times=2)
        for caches, res in zip(("cold", "warm"), runs, strict=True):
            res.update(model=f"readme, {label}", caches=caches)
            print(json.dumps(res), flush=True)
            rows.append(res)
    for r in rows:
        if "compile" in r:
            r["total"] = r["compile"] + r["first_call"]
    cold = {r["model"]: r.get("total") for r in rows if r["caches"] == "cold"}
    warm = {r["model"]: r.get("total") for r in rows if r["caches"] == "warm"}
    for r in rows:
        r["value"] = r.get("error") or f"logp {r['logp']:.10f}"
    cols = [
        ("model", "model"),
        ("caches", "caches"),
        ("compile", "rewrites (CPU s)"),
        ("first_call", "first call: Numba compile + run (CPU s)"),
        ("total", "total (CPU s)"),
        ("value", "value at the initial point"),
    ]
    aware, naive = "readme, noise-aware", "readme, naive"
    summary = ""
    if all(d.get(k) is not None for d in (cold, warm) for k in (aware, naive)):
        summary = (
            f"\nFirst use from empty caches: {cold[aware]:.2f} CPU-s for the noise-aware model's "
            f"first logp + gradient against {cold[naive]:.2f} for the naive one (extra "
            f"{cold[aware] - cold[naive]:.2f}); with the caches the first process filled "
            f"{warm[aware]:.2f} and {warm[naive]:.2f}.\n"
        )
    body = (
        "# First use: the README model's first logp + gradient, empty and filled caches\n\n"
        "PyTensor's default (Numba) backend, `model.logp_dlogp_function()` and one call at "
        "the initial point, each row one fresh process; `cold` = empty PyTensor, Numba and "
        "JAX caches (`PYTENSOR_FLAGS=base_compiledir=<tmp>`, `NUMBA_CACHE_DIR=<tmp>`), "
        "`warm` = a second process with the caches the cold one filled. CPU seconds of the "
        "measured part only (imports and building the model excluded). See "
        "`benchmarks/cold_compile_parts.py`.\n\n" + md_table(rows, cols) + summary
    )
    write_results("first_use_compile", info, body, {"rows": rows}, t_start)


def main():
    sys.path.insert(0, str(HERE))
    from _common import RESULTS, machine_info, md_table, write_results

    ap = argparse.ArgumentParser()
    ap.add_argument("--worker")
    ap.add_argument("--tree", type=Path, help="checkout whose package the models use")
    ap.add_argument("--label", default="this tree")
    ap.add_argument("--cases", default="ops,models", help="ops, models, jax or first-use")
    ap.add_argument(
        "--models", default=",".join(MODELS), help="time_to_posterior models (also: readme)"
    )
    ap.add_argument("--append", action="store_true")
    args = ap.parse_args()
    if args.worker:
        spec = json.loads(args.worker)
        case = {
            "op": op_case,
            "model": model_case,
            "naive": lambda model: model_case(model, noise_aware=False),
            "jax": jax_case,
        }[spec["kind"]]
        res = case(spec["case"])
        print(json.dumps(res))
        return
    t_start = time.perf_counter()
    info = machine_info()
    if args.cases == "first-use":
        first_use(args, info, t_start)
        return
    rows = []
    if args.append and (RESULTS / f"{NAME}.json").exists():
        rows = json.loads((RESULTS / f"{NAME}.json").read_text())["rows"]
    cases = args.cases.split(",")
    specs = [("op", c) for c in OPS if "ops" in cases]
    specs += [("model", c) for c in args.models.split(",") if "models" in cases]
    specs += [("jax", "readme")] if "jax" in cases else []
    for kind, case in specs:
        (res,) = run({"kind": kind, "case": case}, None if kind == "op" else args.tree)
        res.update(kind=kind, case=case, tree="-" if kind == "op" else args.label)
        print(json.dumps(res), flush=True)
        rows.append(res)
    for r in rows:
        r["value"] = (
            f"logp {r['logp']:.10f}, grad {', '.join(f'{g:.8f}' for g in r['grad'])}"
            if "logp" in r
            else r.get("error", "")
        )
    cols = [
        ("kind", "kind"),
        ("case", "case"),
        ("tree", "package"),
        ("compile", "rewrites / build (CPU s)"),
        ("first_call", "first call (CPU s)"),
        ("value", "value at the initial point"),
    ]
    body = (
        "# Cold compile parts: single ops and model graphs, empty caches\n\n"
        "Each row: one fresh process with empty PyTensor and Numba caches, CPU seconds. "
        "See the script's docstring.\n\n" + md_table(rows, cols)
    )
    write_results(NAME, info, body, {"rows": rows}, t_start)


if __name__ == "__main__":
    main()
