"""Every JAX transformation a user chains, with a drop-in op inside, in a function compiled by
PyTensor's JAX mode (``pytensor.function(..., mode="JAX")``, its jitted JAX function) and in one
from PyMC's ``get_jaxified_graph`` (what numpyro and blackjax take): derivatives of every
order and mode against JAX's own differentiation of the same computation in ``jax.numpy``,
Python scalars and closures, reuse after a transformation, undefined gradients, exceptions,
float32, devices (``pmap``, ``shard_map``, sharded ``jit``) and ``jax.export`` to a fresh
process. The device, float32 and export cases run in processes of their own (a device count
and x64 are set once per process)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest

# pytest's own message (no reason given) names the module, which the suite's skip check reads:
# on the py312 stack, which pins both, a failed import fails instead of skipping.
jax = pytest.importorskip("jax")
pymc_jax = pytest.importorskip("pymc.sampling.jax")
import jax.numpy as jnp
from backend_ops import GaussLogLike, GaussLogLikeNoDataGrad, VecMul
from jax_ops import Kepler, jaxify, kepler_reference

from libsection import _jax_ffi
from libsection.pytensor import pytensor_op

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "data" / "gradient"))
from gradient_ops import LogisticHand  # noqa: E402

KINDS = ["mode", "pymc"]
MEAN = np.array([0.3, 1.1, 2.5, 4.0])
ECC = 0.4


def close(actual, expected, rtol=1e-9, atol=1e-12):
    for a, e in zip(jax.tree.leaves(actual), jax.tree.leaves(expected), strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(e), rtol=rtol, atol=atol)


def kepler_functions(kind):
    mean, ecc = pt.dvector("M"), pt.dscalar("e")
    return jaxify(kind, [mean, ecc], [Kepler()(mean, ecc)]), lambda m, e: kepler_reference(
        m, e, jnp
    )


def scalar(f):
    return lambda m, e: jnp.sum(f(m, e) ** 2 * jnp.cos(m))


T_M, T_E, COT = np.linspace(0.5, -0.5, 4), 0.25, np.array([1.0, -2.0, 0.5, 3.0])

# Each transformation of a function of (M, e) (vector output), as a user writes it.
TRANSFORMS = {
    "grad": lambda f: jax.grad(scalar(f), argnums=(0, 1))(MEAN, ECC),
    "jit(grad)": lambda f: jax.jit(jax.grad(scalar(f), argnums=(0, 1)))(MEAN, ECC),
    "value_and_grad": lambda f: jax.value_and_grad(scalar(f), argnums=1)(MEAN, ECC),
    "grad(grad)": lambda f: jax.grad(jax.grad(scalar(f), argnums=1), argnums=1)(MEAN, ECC),
    "grad(grad) mixed": lambda f: jax.grad(
        lambda m, e: jnp.sum(jax.grad(scalar(f), argnums=0)(m, e)), argnums=1
    )(MEAN, ECC),
    "jacrev": lambda f: jax.jacrev(f, argnums=(0, 1))(MEAN, ECC),
    "jacfwd": lambda f: jax.jacfwd(f, argnums=(0, 1))(MEAN, ECC),
    "hessian": lambda f: jax.hessian(scalar(f), argnums=(0, 1))(MEAN, ECC),
    "jit(hessian)": lambda f: jax.jit(jax.hessian(scalar(f), argnums=0))(MEAN, ECC),
    "jacfwd(jacfwd)": lambda f: jax.jacfwd(jax.jacfwd(scalar(f), argnums=1), argnums=1)(MEAN, ECC),
    "jvp": lambda f: jax.jvp(f, (MEAN, ECC), (T_M, T_E)),
    "jvp(jvp)": lambda f: jax.jvp(lambda e: jax.jvp(f, (MEAN, e), (T_M, T_E))[1], (ECC,), (0.5,)),
    "linearize": lambda f: jax.linearize(f, MEAN, ECC)[1](T_M, T_E),
    "vjp": lambda f: jax.vjp(f, MEAN, ECC)[1](COT),
    "jvp(vjp)": lambda f: jax.jvp(lambda m: jax.vjp(f, m, ECC)[1](COT), (MEAN,), (T_M,)),
    "grad(jvp)": lambda f: jax.grad(lambda e: jnp.sum(jax.jvp(f, (MEAN, e), (T_M, T_E))[1]))(ECC),
    "vmap": lambda f: jax.vmap(f, in_axes=(0, None))(np.stack([MEAN, MEAN / 2]), ECC),
    "vmap(grad)": lambda f: jax.vmap(jax.grad(scalar(f), argnums=1), in_axes=(None, 0))(
        MEAN, np.array([0.1, 0.4, 0.7])
    ),
    "grad(vmap)": lambda f: jax.grad(
        lambda e: jnp.sum(jax.vmap(f, in_axes=(None, 0))(MEAN, e)), argnums=0
    )(np.array([0.1, 0.4, 0.7])),
    "jit(vmap(hessian))": lambda f: jax.jit(
        jax.vmap(jax.hessian(scalar(f), argnums=1), in_axes=(None, 0))
    )(MEAN, np.array([0.1, 0.4])),
    "scan": lambda f: jax.lax.scan(
        lambda c, e: (c + f(MEAN, e), f(MEAN, e)[0]), 0.0 * MEAN, np.array([0.1, 0.4, 0.7])
    ),
    "grad(scan)": lambda f: jax.grad(
        lambda e: jax.lax.scan(
            lambda c, k: (c * f(MEAN, e * k)[1], None), 1.0, np.array([0.5, 1.0, 1.5])
        )[0]
    )(ECC),
    "checkpoint": lambda f: jax.grad(jax.checkpoint(scalar(f)), argnums=(0, 1))(MEAN, ECC),
    "closure": lambda f: jax.jit(jax.grad(lambda e: scalar(f)(MEAN, e)))(ECC),
    "cond": lambda f: jax.grad(
        lambda e: jax.lax.cond(e > 0.2, lambda: scalar(f)(MEAN, e), lambda: e)
    )(ECC),
}


@pytest.mark.parametrize("transform", list(TRANSFORMS))
@pytest.mark.parametrize("kind", KINDS)
def test_a_transformation_of_the_op_matches_jax_own(kind, transform, cache_dir):
    f, reference = kepler_functions(kind)
    close(TRANSFORMS[transform](f), TRANSFORMS[transform](reference), rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("kind", KINDS)
def test_every_order_through_an_op_whose_pullback_is_the_op(kind, cache_dir):
    # VecMul's gradient is VecMul again: pt.grad(pt.grad(...)) is exact in CVM, so is JAX's.
    a, b = pt.dvector("a"), pt.dvector("b")
    cost = (VecMul()(VecMul()(a, b), a) * b).sum()  # sum(a^2 b^2)
    f = jaxify(kind, [a, b], [cost])
    x, y = np.array([0.5, -1.0, 2.0]), np.array([1.5, 0.25, -0.75])
    by_pytensor = pytensor.function([a, b], pytensor.gradient.hessian(cost, a), mode="CVM")
    close(jax.hessian(f)(x, y), by_pytensor(x, y))
    close(jax.hessian(f)(x, y), np.diag(2 * y**2))
    close(jax.jacfwd(jax.jacrev(f, argnums=1), argnums=0)(x, y), np.diag(4 * x * y))
    third = jax.grad(lambda u: jnp.sum(jax.hessian(f)(u, y)))(x)  # zero: 2 b^2 is free of a
    close(third, np.zeros(3))


@pytest.mark.parametrize("kind", KINDS)
def test_a_derivative_pytensor_lacks_names_the_op(kind, cache_dir):
    # GaussLogLike's gradient in mu is GaussLogLikeGrad, a C op whose gradient is not implemented.
    y, mu = pt.dvector("y"), pt.dscalar("mu")
    cost = GaussLogLike()(y, mu)
    with pytest.raises(Exception, match="GaussLogLikeGrad") as by_pytensor:
        pytensor.gradient.grad(pytensor.gradient.grad(cost, mu), mu)
    f = jaxify(kind, [y, mu], [cost])
    data = np.array([0.5, 1.0, 2.0])
    close(jax.grad(f, argnums=1)(data, 0.25), (data - 0.25).sum())  # the first exists
    for second in (
        jax.hessian(f, argnums=1),
        jax.grad(jax.grad(f, argnums=1), argnums=1),
        jax.jacfwd(jax.grad(f, argnums=1), argnums=1),
    ):
        with pytest.raises(type(by_pytensor.value), match="GaussLogLikeGrad"):
            jax.make_jaxpr(second)(data, 0.25)  # at trace time


@pytest.mark.parametrize("kind", KINDS)
def test_python_scalars_weak_types_and_constants(kind, cache_dir):
    mean, ecc, scale = pt.dscalar("M"), pt.dscalar("e"), pt.dscalar("s")
    f = jaxify(kind, [mean, ecc, scale], [Kepler()(mean, ecc) * scale])

    def reference(m, e, s):
        return kepler_reference(m, e, jnp) * s

    close(
        jax.grad(f, argnums=(0, 1, 2))(1.1, 0.4, 8.0),
        jax.grad(reference, argnums=(0, 1, 2))(1.1, 0.4, 8.0),
    )
    close(f(1, 0, 2), 2.0)  # Python ints, cast at the node
    close(f(np.float32(1.1), jnp.float32(0.4), 8.0), reference(1.1, 0.4, 8.0), rtol=1e-6)
    close(jax.jit(lambda m: f(m, 0.4, 8.0))(1.1), reference(1.1, 0.4, 8.0))  # closed over
    close(
        jax.jit(jax.grad(lambda m: f(m, ECC, 2.0)))(jnp.asarray(1.1)),
        jax.grad(lambda m: reference(m, ECC, 2.0))(1.1),
    )


@pytest.mark.parametrize("kind", KINDS)
def test_the_function_is_reusable_after_any_transformation(kind, cache_dir):
    f, reference = kepler_functions(kind)
    g = jax.grad(scalar(f), argnums=1)
    expected = jax.grad(scalar(reference), argnums=1)(MEAN, ECC)
    close(jax.jit(g)(MEAN, ECC), expected)
    close(g(MEAN, ECC), expected)  # a new trace of the same function
    close(jax.vmap(g, in_axes=(None, 0))(MEAN, np.array([ECC, ECC])), np.stack([expected] * 2))
    close(jax.jit(scalar(f))(MEAN, ECC), scalar(reference)(MEAN, ECC))
    close(
        jax.jit(jax.hessian(scalar(f), argnums=1))(MEAN, ECC),
        jax.hessian(scalar(reference), argnums=1)(MEAN, ECC),
    )
    close(jax.jit(g)(MEAN * 2, 0.1), jax.grad(scalar(reference), argnums=1)(MEAN * 2, 0.1))


@pytest.mark.parametrize("kind", KINDS)
def test_an_undefined_gradient_is_an_error_only_where_jax_differentiates(kind, cache_dir):
    y, mu = pt.dvector("y"), pt.dscalar("mu")
    cost = GaussLogLikeNoDataGrad()(y, mu)
    with pytest.raises(Exception) as by_pytensor:
        pytensor.gradient.grad(cost, y)
    f = jaxify(kind, [y, mu], [cost])
    data = np.array([0.5, 1.0, 2.0])
    expected = (data - 0.25).sum()
    # The data as JAX leaves it: a constant, an argument not differentiated, under vmap, behind
    # stop_gradient: the sampler's case, zero cotangents never asked for.
    close(jax.grad(lambda m: f(data, m))(0.25), expected)
    close(jax.jit(jax.grad(f, argnums=1))(data, 0.25), expected)
    batch = np.stack([data, data])
    close(jax.vmap(jax.grad(f, argnums=1), in_axes=(0, None))(batch, 0.25), np.full(2, expected))
    g = jax.grad(lambda d, m: f(jax.lax.stop_gradient(d), m), argnums=(0, 1))(data, 0.25)
    close(g, (np.zeros(3), expected))
    close(jax.jvp(lambda m: f(data, m), (0.25,), (1.0,))[1], expected)
    # A differentiated value reaching the data: PyTensor's error class, at trace time, naming
    # the op and the input.
    for differentiated, args in (
        (jax.grad(f, argnums=0), (data, 0.25)),
        (jax.grad(f, argnums=(0, 1)), (data, 0.25)),
        (lambda d, m: jax.jvp(lambda d: f(d, m), (d,), (np.ones(3),)), (data, 0.25)),
        (jax.grad(lambda s, m: f(s * data, m)), (1.0, 0.25)),
        (jax.jacfwd(f, argnums=(0, 1)), (data, 0.25)),
    ):
        with pytest.raises(type(by_pytensor.value), match=r"GaussLogLikeNoDataGrad's input 0"):
            jax.make_jaxpr(differentiated)(*args)


def test_an_undefined_gradient_error_names_the_input_by_its_name(cache_dir):
    y, mu = pt.dvector("y"), pt.dscalar("mu")
    f = jaxify("pymc", [y, mu], [GaussLogLikeNoDataGrad()(y, mu)])
    with pytest.raises(Exception, match=r"input 0 \(y\).*grad_not_implemented|input 0 \(y\)"):
        jax.grad(f, argnums=0)(np.ones(3), 0.5)


# ---- exceptions (issue 40: the pure_callback path kept no class) -----------------------------


@pytest.fixture(params=["ffi", "callback"])
def path(request, monkeypatch):
    """The FFI call, or the pure_callback path (as with a jaxlib whose handler cannot be
    built)."""
    if request.param == "callback":
        monkeypatch.setattr(_jax_ffi, "target_ready", lambda: False)
    return request.param


def test_an_own_perform_error_keeps_its_class_in_jax_mode(cache_dir):
    from backend_ops import VecMulWithPerform

    x, y = pt.dvector("x"), pt.dvector("y")
    f = pytensor.function([x, y], VecMulWithPerform()(x, y), mode="JAX")
    with pytest.raises(ValueError, match="broadcast") as caught:
        f(np.ones(3), np.ones(4))
    assert any("VecMulWithPerform" in n for n in getattr(caught.value, "__notes__", []))
    np.testing.assert_array_equal(f(np.ones(2), np.full(2, 3.0)), np.full(2, 3.0))


def test_an_unbound_orbit_raises_value_error_in_jax_mode(path, cache_dir):
    mean, ecc = pt.dvector("M"), pt.dscalar("e")
    f = pytensor.function([mean, ecc], Kepler()(mean, ecc), mode="JAX")
    close(f(MEAN, ECC), kepler_reference(MEAN, ECC, np))
    with pytest.raises(ValueError, match=r"eccentricity must be in \[0, 1\), got 1\.2"):
        f(MEAN, 1.2)
    g = jax.jit(pymc_jax.get_jaxified_graph([mean, ecc], [Kepler()(mean, ecc)]))
    with pytest.raises(Exception, match=r"ValueError in Kepler: kepler: eccentricity") as e:
        jax.block_until_ready(g(MEAN, 1.0))
    assert isinstance(_jax_ffi.original_error(e.value), ValueError)


# ---- processes of their own: float32, devices, export -----------------------------------------


def run_script(code: str, env=None, timeout=600) -> dict:
    """Runs ``code`` in a fresh Python (tests/python importable) and returns the JSON it prints
    last."""
    env = {**os.environ, **(env or {})}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HERE), env.get("PYTHONPATH", "")]))
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        cwd=HERE,
        env=env,
        timeout=timeout,  # a hang guard
    )
    assert done.returncode == 0, f"the script failed:\n{done.stdout}\n{done.stderr}"
    return json.loads(done.stdout.strip().splitlines()[-1])


FLOAT32 = """
import json, warnings
import numpy as np, pytensor, pytensor.tensor as pt
warnings.simplefilter("ignore")
import jax, jax.numpy as jnp
from pymc.sampling.jax import get_jaxified_graph
from backend_ops import VecMulWithPerform
from jax_ops import Kepler
from libsection import _jax_ffi
if {callback}:
    _jax_ffi.target_ready = lambda: False
mean, ecc = pt.dvector("M"), pt.dscalar("e")
out = Kepler()(mean, ecc)
cost = (out ** 2).sum()
cvm = pytensor.function([mean, ecc], [out, pytensor.gradient.grad(cost, ecc)], mode="CVM")
mode = pytensor.function([mean, ecc], [out, pytensor.gradient.grad(cost, ecc)], mode="JAX")
x, y = pt.dvector("x"), pt.dvector("y")
perform = pytensor.function([x, y], VecMulWithPerform()(x, y), mode="JAX")
f = get_jaxified_graph([mean, ecc], [cost])
M = np.array([0.3, 1.1, 2.5, 4.0])
results = {{
    "x64": jax.config.jax_enable_x64,
    "cvm": [np.asarray(v, np.float64).tolist() for v in cvm(M, 0.4)],
    "mode": [np.asarray(v, np.float64).tolist() for v in mode(M, 0.4)],
    "mode_dtype": str(np.asarray(mode(M, 0.4)[0]).dtype),
    "perform": np.asarray(perform(M, M), np.float64).tolist(),
    "jaxified_grad": float(jax.jit(jax.grad(lambda e: f(M, e)[0]))(0.4)),
    "jaxified_dtype": str(jax.grad(lambda e: f(M, e)[0])(0.4).dtype),
}}
print(json.dumps(results))
"""


@pytest.mark.parametrize("path", ["ffi", "callback"])
def test_float32_runs_the_float64_op_as_cvm_does(path, tmp_path):
    # PyTensor's JAX mode turns x64 off with floatX=float32: the C code still gets float64.
    results = run_script(
        FLOAT32.format(callback=path == "callback"),
        env={"PYTENSOR_FLAGS": "floatX=float32", "LIBSECTION_CACHE_DIR": str(tmp_path)},
    )
    assert results["x64"] is False
    assert results["mode_dtype"] == "float32"
    (value, grad), (cvm_value, cvm_grad) = results["mode"], results["cvm"]
    np.testing.assert_allclose(value, cvm_value, rtol=1e-6)
    np.testing.assert_allclose(grad, cvm_grad, rtol=1e-5)
    np.testing.assert_allclose(results["jaxified_grad"], cvm_grad, rtol=1e-5)
    assert results["jaxified_dtype"] == "float32"
    m = np.array([0.3, 1.1, 2.5, 4.0], np.float32)
    np.testing.assert_allclose(results["perform"], m * m, rtol=1e-6)


DEVICES = """
import json, warnings
warnings.simplefilter("ignore")
import numpy as np, pytensor, pytensor.tensor as pt
import jax, jax.numpy as jnp
from jax.sharding import AxisType, NamedSharding, PartitionSpec as P
from pymc.sampling.jax import get_jaxified_graph
from backend_ops import VecMul
from jax_ops import Kepler, jaxify, kepler_reference
assert len(jax.devices()) == 2, jax.devices()
M = np.linspace(0.2, 3.0, 8).reshape(2, 4)
A, B = np.linspace(-1, 1, 6).reshape(2, 3), np.linspace(0.5, 2, 6).reshape(2, 3)


def functions(kind):
    if kind == "reference":
        return (lambda m, e: jnp.sum(kepler_reference(m, e, jnp, loop=False) ** 2),
                lambda a, b: jnp.sum(a * b * a))
    mean, ecc = pt.dvector("M"), pt.dscalar("e")
    a, b = pt.dvector("a"), pt.dvector("b")
    return (jaxify(kind, [mean, ecc], [(Kepler()(mean, ecc) ** 2).sum()]),
            jaxify(kind, [a, b], [(VecMul()(a, b) * a).sum()]))


def program(kepler, vecmul):
    # What a user runs on two devices, as a list of results.
    out = []
    if "{case}" == "shard_map":
        # the default checks (check_vma), on a mesh of each axis type; a Python float closed
        # over; the gradients of an op whose gradient is a C op (VecMul) and of one whose
        # gradient is a graph of its output (Kepler); an input the mesh replicates (not
        # varying), differentiated inside the body and outside it
        for axis_type in (AxisType.Explicit, AxisType.Auto):
            mesh = jax.make_mesh((2,), ("d",), axis_types=(axis_type,))
            put = lambda x: jax.device_put(x, NamedSharding(mesh, P("d")))
            def body(m, a, b):
                g1 = jax.grad(lambda e: kepler(m[0], e))(0.4)
                g2 = jax.grad(vecmul, argnums=(0, 1))(a[0], b[0])
                return kepler(m[0], 0.4)[None], g1[None], g2[0][None], g2[1][None]
            out.append(jax.jit(jax.shard_map(body, mesh=mesh, in_specs=(P("d"),) * 3,
                                             out_specs=(P("d"),) * 4))(put(M), put(A), put(B)))
            inside = jax.shard_map(lambda m, e: jax.grad(lambda e: kepler(m[0], e))(e)[None],
                                   mesh=mesh, in_specs=(P("d"), P()), out_specs=P("d"))
            out.append(jax.jit(inside)(put(M), 0.4))
            outside = jax.shard_map(lambda m, e: kepler(m[0], e)[None], mesh=mesh,
                                    in_specs=(P("d"), P()), out_specs=P("d"))
            out.append(jax.jit(jax.grad(lambda e: jnp.sum(outside(put(M), e))))(0.4))
    elif "{case}" == "pmap":
        k = 0.4  # a Python float closed over
        out.append(jax.pmap(lambda m: (kepler(m, k), jax.grad(lambda e: kepler(m, e))(k),
                                       jax.hessian(lambda e: kepler(m, e))(k)))(M))
        out.append(jax.pmap(jax.grad(vecmul, argnums=(0, 1)))(A, B))
        out.append(jax.pmap(lambda a, b: jax.lax.psum(vecmul(a, b), "i"), axis_name="i")(A, B))
    else:  # jit over inputs sharded along a batch (vmap) axis, on a mesh of each axis type
        # (one of Explicit axes in its context, as JAX's own functions here need it)
        for axis_type in (AxisType.Explicit, AxisType.Auto):
            mesh = jax.make_mesh((2,), ("d",), axis_types=(axis_type,))
            put = lambda x: jax.device_put(x, NamedSharding(mesh, P("d")))
            e0 = np.float64(0.4)  # JAX's own vmap(grad) fails here on a Python float
            vk = jax.jit(jax.vmap(lambda m: (kepler(m, e0),
                                             jax.grad(lambda e: kepler(m, e))(e0))))
            vv = jax.jit(jax.vmap(jax.grad(vecmul, argnums=(0, 1))))
            with jax.set_mesh(mesh):
                out.extend([vk(put(M)), vv(put(A), put(B))])
    return [np.asarray(x).tolist() for x in jax.tree.leaves(out)]


want = program(*functions("reference"))
print(json.dumps({{kind: {{"got": program(*functions(kind)), "want": want}}
                  for kind in ("mode", "pymc")}}))
"""


@pytest.mark.parametrize("case", ["shard_map", "pmap", "sharded_jit"])
def test_devices(case, tmp_path):
    results = run_script(
        DEVICES.format(case=case),
        env={
            "XLA_FLAGS": "--xla_force_host_platform_device_count=2",
            "LIBSECTION_CACHE_DIR": str(tmp_path),
        },
    )
    for kind in KINDS:
        got, want = results[kind]["got"], results[kind]["want"]
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-8, atol=1e-10, err_msg=f"{case} {kind}")


# ---- jax.export -------------------------------------------------------------------------------

EXPORT = """
import json, sys
import numpy as np, pytensor.tensor as pt
import jax, jax.numpy as jnp
from backend_ops import ScaleByParam
from jax_ops import Kepler, jaxify
from libsection import _jax_ffi
M, e, x = pt.dvector("M"), pt.dscalar("e"), pt.dvector("x")
kepler = jaxify({kind!r}, [M, e], [Kepler()(M, e)])
scaled = jaxify({kind!r}, [x], [ScaleByParam("float64", 2.5)(x)])  # params travel with the call

def program(m, e):
    cost = lambda m, e: jnp.sum(kepler(m, e) ** 2 * jnp.cos(m))
    return scaled(kepler(m, e)), jax.grad(cost, argnums=(0, 1))(m, e)

# What a user writes for an FFI call without a compatibility guarantee:
check = jax.export.DisabledSafetyCheck.custom_call(_jax_ffi.TARGET)
args = (np.array({mean}), {ecc})
exported = jax.export.export(jax.jit(program), disabled_checks=[check])(*args)
open({path!r}, "wb").write(exported.serialize())
print(json.dumps([np.asarray(o).tolist() for o in jax.tree.leaves(program(*args))]))
"""

RUN_EXPORTED = """
import json
import numpy as np
import jax
jax.config.update("jax_enable_x64", True)
import libsection  # registers libsection's XLA target: nothing else of the op is imported
exported = jax.export.deserialize(bytearray(open({path!r}, "rb").read()))
try:
    out = exported.call(np.array({mean}), {ecc})
    print(json.dumps({{"out": [np.asarray(o).tolist() for o in jax.tree.leaves(out)]}}))
except Exception as e:
    print(json.dumps({{"error": f"{{type(e).__name__}}: {{e}}"}}))
"""


def export_and_run(kind, tmp_path, run_cache):
    """Exports the program in one fresh process (its modules built in ``tmp_path``'s cache),
    runs it in another with ``run_cache``: (the first's results, the second's answer)."""
    cache, blob = tmp_path / "cache", tmp_path / "program.bin"
    values = {"path": str(blob), "mean": MEAN.tolist(), "ecc": ECC}
    here = run_script(EXPORT.format(kind=kind, **values), env={"LIBSECTION_CACHE_DIR": str(cache)})
    there = run_script(
        RUN_EXPORTED.format(**values), env={"LIBSECTION_CACHE_DIR": str(run_cache or cache)}
    )
    return here, there


@pytest.mark.parametrize("kind", KINDS)
def test_an_exported_computation_runs_in_a_fresh_process(kind, tmp_path):
    here, there = export_and_run(kind, tmp_path, None)
    assert "error" not in there, there["error"]
    _, reference = kepler_functions("pymc")
    cost = lambda m, e: jnp.sum(reference(m, e) ** 2 * jnp.cos(m))  # noqa: E731
    expected = (2.5 * reference(MEAN, ECC), *jax.grad(cost, argnums=(0, 1))(MEAN, ECC))
    close([np.asarray(o) for o in here], expected)
    close([np.asarray(o) for o in there["out"]], expected)


def test_an_exported_computation_says_which_module_it_lacks(tmp_path):
    empty = tmp_path / "empty-cache"
    _, there = export_and_run("pymc", tmp_path, empty)
    assert "error" in there
    assert "Kepler's module" in there["error"] or "ScaleByParam's module" in there["error"]
    assert str(empty) in there["error"] and "LIBSECTION_CACHE_DIR" in there["error"]


EXPORT_DERIVED = """
import json, sys
sys.path.insert(0, "data/gradient")
import numpy as np, pytensor.tensor as pt
import jax, jax.numpy as jnp
jax.config.update("jax_enable_x64", True)
from gradient_ops import Logistic, logistic_data
from jax_ops import jaxify
from libsection import _jax_ffi
from libsection.pytensor import pytensor_op
theta, obs = pt.dvector("theta"), pt.dvector("obs")
loglik = jaxify({kind!r}, [theta, obs], [pytensor_op(Logistic())(theta, obs)])

def program(t, o):  # the gradient libsection derives, in reverse and forward mode
    return loglik(t, o), jax.grad(loglik)(t, o), jax.jvp(lambda s: loglik(s, o), (t,), (t / 2,))[1]

check = jax.export.DisabledSafetyCheck.custom_call(_jax_ffi.TARGET)
args = (np.array([0.7, 9.0, 0.6]), logistic_data())
exported = jax.export.export(jax.jit(program), disabled_checks=[check])(*args)
open({path!r}, "wb").write(exported.serialize())
out = [np.asarray(o).tolist() for o in program(*args)]
print(json.dumps({{"args": [a.tolist() for a in args], "out": out}}))
"""

RUN_EXPORTED_ARGS = """
import json
import numpy as np
import jax
jax.config.update("jax_enable_x64", True)
import libsection  # registers libsection's XLA target: nothing else of the op is imported
exported = jax.export.deserialize(bytearray(open({path!r}, "rb").read()))
args = [np.array(a) for a in json.loads(open({args!r}).read())]
try:
    print(json.dumps({{"out": [np.asarray(o).tolist() for o in exported.call(*args)]}}))
except Exception as e:
    print(json.dumps({{"error": f"{{type(e).__name__}}: {{e}}"}}))
"""


@pytest.mark.parametrize("kind", KINDS)
def test_an_exported_derived_gradient_runs_in_a_fresh_process(kind, tmp_path):
    # The derivative's module is found by the op it differentiates (Logistic.pullback), as its
    # manifest names it, not by the class of its node.
    cache, blob, args = tmp_path / "cache", tmp_path / "program.bin", tmp_path / "args.json"
    env = {"LIBSECTION_CACHE_DIR": str(cache)}
    here = run_script(EXPORT_DERIVED.format(kind=kind, path=str(blob)), env=env)
    args.write_text(json.dumps(here["args"]))
    there = run_script(RUN_EXPORTED_ARGS.format(path=str(blob), args=str(args)), env=env)
    assert "error" not in there, there["error"]
    for got, expected in zip(there["out"], here["out"], strict=True):
        np.testing.assert_allclose(got, expected, rtol=1e-13, atol=0)
    theta, obs = (np.array(a) for a in here["args"])
    t = pt.dvector("theta")
    ll = pytensor_op(LogisticHand())(t, obs)  # the same log-likelihood, its gradient in C
    hand = pytensor.function([t], pt.grad(ll, t), mode="CVM")(theta)
    np.testing.assert_allclose(here["out"][1], hand, rtol=1e-9)
    np.testing.assert_allclose(here["out"][2], hand @ (theta / 2), rtol=1e-9)


EXPORT_RECORDED = """
import json, sys
sys.path.insert(0, "data/gradient")
import numpy as np, pytensor.tensor as pt
import jax
jax.config.update("jax_enable_x64", True)
from gradient_ops import WeightedLogSumExp
from jax_ops import jaxify
from libsection import _jax_ffi
x, w = pt.dvector("x"), pt.dvector("w")
f = jaxify("pymc", [x, w], [WeightedLogSumExp()(x, w)])
program = jax.jit(jax.value_and_grad(f, argnums=(0, 1)))  # values from the swept tape
check = jax.export.DisabledSafetyCheck.custom_call(_jax_ffi.TARGET)
args = (np.sin(np.arange(40.0)), np.cos(np.arange(40.0)) ** 2)
exported = jax.export.export(program, disabled_checks=[check])(*args)
open({path!r}, "wb").write(exported.serialize())
out = [np.asarray(o).tolist() for o in jax.tree.leaves(program(*args))]
print(json.dumps({{"args": [a.tolist() for a in args], "out": out}}))
"""

RUN_RECORDED = """
import json
import numpy as np
import jax
jax.config.update("jax_enable_x64", True)
from libsection import _core  # registers libsection's XLA target: nothing else of the op
exported = jax.export.deserialize(bytearray(open({path!r}, "rb").read()))
args = [np.array(a) for a in json.loads(open({args!r}).read())]
_core.recordings_swept(reset=True)
out = [np.asarray(o).tolist() for o in jax.tree.leaves(exported.call(*args))]
print(json.dumps({{"out": out, "swept": _core.recordings_swept()}}))
"""


def test_an_exported_gradient_sweeps_its_values_tape_in_a_fresh_process(tmp_path):
    """jax.value_and_grad of an op whose values come from a taped pass (a TapedValues call,
    80 differentiated scalars) exports, and runs in a process that imports only libsection:
    the record op's module is found as the pullback's is, and its recording is swept."""
    cache, blob, args = tmp_path / "cache", tmp_path / "program.bin", tmp_path / "args.json"
    env = {"LIBSECTION_CACHE_DIR": str(cache)}
    here = run_script(EXPORT_RECORDED.format(path=str(blob)), env=env)
    args.write_text(json.dumps(here["args"]))
    there = run_script(RUN_RECORDED.format(path=str(blob), args=str(args)), env=env)
    assert there["swept"] == 1
    for got, expected in zip(there["out"], here["out"], strict=True):
        np.testing.assert_allclose(got, expected, rtol=1e-13, atol=0)
    x, w = (np.array(a) for a in here["args"])
    e = w * np.exp(x)
    np.testing.assert_allclose(here["out"][0], np.log(e.sum()), rtol=1e-13)
    np.testing.assert_allclose(here["out"][1], e / e.sum(), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(here["out"][2], np.exp(x) / e.sum(), rtol=1e-12, atol=1e-15)


def test_the_call_names_nothing_of_this_process(cache_dir):
    # What the exported module holds: the cache key and a token, no address.
    f, _ = kepler_functions("pymc")
    text = jax.jit(f).lower(MEAN, ECC).as_text()
    (call,) = [line for line in text.splitlines() if _jax_ffi.TARGET in line]
    assert "module = " in call and "instance = " in call
    for attribute in ("entry", "op =", "errors"):
        assert attribute not in call


def test_the_package_imports_no_private_jax_module():
    package = Path(_jax_ffi.__file__).parent
    offenders = [p.name for p in package.glob("*.py") if "jax._src" in p.read_text()]
    assert offenders == []
