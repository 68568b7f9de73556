"""Kernels of fedtheory.problems.nn: NumPy references against independent formulas and finite
differences, the simulator's server optimizer bit for bit, the CUDA sources through nvcc, and the
CuPy path against the NumPy path (GPU only)."""

import ctypes
import re
import shutil
import subprocess
import sys
import types
from importlib import resources

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from scipy.special import log_softmax, softmax

from fedtheory.errors import AssumptionError
from fedtheory.problems.nn import kernels

#: The RawKernel each dtype case of test_cupy_kernels_agree_with_numpy runs (kernels.softmax_xent
#: picks it by dtype): every kernel defined in a .cu file must be here.
GPU_COMPARED = {np.float64: "softmax_xent_f64", np.float32: "softmax_xent_f32"}

shapes = st.tuples(st.integers(1, 3), st.integers(1, 6), st.integers(1, 7))
seeds = st.integers(0, 2**32 - 1)


@given(shapes, seeds, st.sampled_from(kernels.ACTIVATIONS))
def test_bias_act_matches_formula(shape, seed, activation):
    rng = np.random.default_rng(seed)
    z = rng.standard_normal(shape)
    b = rng.standard_normal((1, shape[-1]))
    a = kernels.bias_act(z, b, activation)
    want = np.maximum(z + b, 0.0) if activation == "relu" else np.tanh(z + b)
    np.testing.assert_array_equal(a, want)
    np.testing.assert_array_equal(kernels.bias_act_reference(z, b, activation), want)


@given(shapes, seeds, st.sampled_from(kernels.ACTIVATIONS), st.booleans())
def test_numpy_schedules_equal_the_bodies_bit_for_bit(shape, seed, activation, overwrite):
    """The in-place NumPy schedules compute exactly what the (fusable) bodies compute."""
    rng = np.random.default_rng(seed)
    z = rng.standard_normal(shape)
    b = rng.standard_normal((1, shape[-1]))
    a = kernels.bias_act(z, b, activation)
    np.testing.assert_array_equal(a, kernels._bias_act_body(np, activation)(z, b))
    da = rng.standard_normal(shape)
    want = kernels.act_backward_reference(da, a, activation)
    da_in = da.copy()
    got = kernels.act_backward(da_in, a, activation, overwrite=overwrite)
    np.testing.assert_array_equal(got, want)
    if not overwrite:
        np.testing.assert_array_equal(da_in, da)  # the input is left alone
    # a broadcasting pair takes the body itself
    np.testing.assert_array_equal(
        kernels.act_backward(da[:1], a, activation),
        kernels.act_backward_reference(da[:1], a, activation),
    )


@given(shapes, seeds, st.sampled_from(kernels.ACTIVATIONS))
def test_act_backward_is_the_derivative(shape, seed, activation):
    """Finite differences (float64, central) of sum(c * act(z + b)) in z and b."""
    rng = np.random.default_rng(seed)
    z = rng.standard_normal(shape)
    b = rng.standard_normal((1, shape[-1]))
    c = rng.standard_normal(shape)
    h = 1e-6
    assume(np.abs(z + b).min() > 1e-3)  # away from the ReLU kink

    def f(z, b):
        return float((c * kernels.bias_act(z, b, activation)).sum())

    dz = kernels.act_backward(c, kernels.bias_act(z, b, activation), activation)
    tol = 1e-8 * max(1.0, abs(f(z, b)))  # central-difference rounding ~ 2e-16 |f| / h
    E = rng.standard_normal(shape)
    fd = (f(z + h * E, b) - f(z - h * E, b)) / (2 * h)
    assert fd == pytest.approx(float((dz * E).sum()), rel=1e-6, abs=tol)
    eb = rng.standard_normal(b.shape)
    fd_b = (f(z, b + h * eb) - f(z, b - h * eb)) / (2 * h)
    assert fd_b == pytest.approx(
        float((dz.sum(axis=-2, keepdims=True) * eb).sum()), rel=1e-6, abs=tol
    )


@given(st.integers(1, 4), st.integers(1, 9), st.integers(2, 12), seeds, st.floats(0.1, 30.0))
def test_softmax_xent_matches_scipy_and_finite_differences(S, B, C, seed, scale):
    rng = np.random.default_rng(seed)
    z = scale * rng.standard_normal((S, B, C))
    y = rng.integers(0, C, size=(S, B))
    w = rng.random((S, B))
    loss, grad = kernels.softmax_xent(z, y, w)
    want_loss = -np.take_along_axis(log_softmax(z, axis=-1), y[..., None], axis=-1)[..., 0]
    np.testing.assert_allclose(loss, want_loss, rtol=1e-12, atol=1e-12)
    want_grad = w[..., None] * (softmax(z, axis=-1) - np.eye(C)[y])
    np.testing.assert_allclose(grad, want_grad, rtol=1e-10, atol=1e-14)

    def f(z):
        return float((w * kernels.softmax_xent(z, y, w)[0]).sum())

    E = rng.standard_normal(z.shape)
    h = 1e-6
    fd = (f(z + h * E) - f(z - h * E)) / (2 * h)
    tol = 1e-8 * max(1.0, abs(f(z)))  # central-difference rounding ~ 2e-16 |f| / h
    assert fd == pytest.approx(float((grad * E).sum()), rel=1e-5, abs=tol)


def test_softmax_xent_is_stable_for_huge_logits():
    z = np.array([[1e4, -1e4, 0.0], [-1e5, -1e5, -1e5]])
    loss, grad = kernels.softmax_xent(z, np.array([1, 2]), np.ones(2))
    assert np.all(np.isfinite(loss)) and np.all(np.isfinite(grad))
    assert loss[0] == pytest.approx(2e4)
    assert loss[1] == pytest.approx(np.log(3.0))
    np.testing.assert_allclose(grad.sum(axis=-1), 0.0, atol=1e-12)


def test_softmax_xent_float32_stays_float32():
    z = np.random.default_rng(0).standard_normal((4, 5)).astype(np.float32)
    loss, grad = kernels.softmax_xent(z, np.zeros(4, dtype=int), np.float32(0.25))
    assert loss.dtype == np.float32 and grad.dtype == np.float32


def test_unknown_activation_is_refused():
    with pytest.raises(AssumptionError, match="activation must be one of relu, tanh"):
        kernels.bias_act(np.zeros(3), np.zeros(3), "sigmoid")


# ---------------------------------------------------------------------------------------------
# CUDA sources: compiled by nvcc where it exists, so a syntax error cannot hide behind no GPU.
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", kernels.CUDA_SOURCES)
def test_cuda_source_compiles_with_nvcc(name, tmp_path):
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc not found on PATH: the CUDA sources were not compiled")
    src = tmp_path / name
    src.write_text(kernels.cuda_source(name))
    ptx = tmp_path / (name + ".ptx")
    proc = subprocess.run(
        [nvcc, "--ptx", "-Werror", "all-warnings", "-o", str(ptx), str(src)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    text = ptx.read_text()
    for entry in ("softmax_xent_f64", "softmax_xent_f32"):
        assert f".entry {entry}(" in text


def test_cuda_source_refuses_unknown_name():
    with pytest.raises(AssumptionError, match="unknown CUDA source"):
        kernels.cuda_source("nope.cu")


# ---------------------------------------------------------------------------------------------
# The CuPy path against the NumPy path (needs a GPU).
# ---------------------------------------------------------------------------------------------


def test_every_cuda_kernel_is_compared_on_a_gpu():
    """The .cu files shipped are CUDA_SOURCES, and every kernel they define is run against its
    NumPy reference by test_cupy_kernels_agree_with_numpy (GPU_COMPARED): a new .cu file or
    kernel fails here until the GPU test covers it."""
    folder = resources.files("fedtheory.problems.nn").joinpath("cuda")
    shipped = sorted(p.name for p in folder.iterdir() if p.name.endswith(".cu"))
    assert shipped == sorted(kernels.CUDA_SOURCES)
    defined = set()
    for name in kernels.CUDA_SOURCES:
        src = kernels.cuda_source(name)
        defined |= set(re.findall(r"^FEDTHEORY_\w+\((\w+),", src, flags=re.M))
        defined |= set(re.findall(r"__global__\s+void\s+(\w+)\s*\(", src)) - {"NAME"}
    assert defined == set(GPU_COMPARED.values())


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", list(GPU_COMPARED))
def test_cupy_kernels_agree_with_numpy(dtype):
    import cupy as cp  # noqa: PLC0415  (optional extra fedtheory[gpu])

    rng = np.random.default_rng(3)
    tol = 1e-12 if dtype == np.float64 else 1e-5
    z = rng.standard_normal((2, 5, 33, 17)).astype(dtype)
    b = rng.standard_normal((1, 17)).astype(dtype)
    for act in kernels.ACTIVATIONS:
        a = kernels.bias_act(cp.asarray(z), cp.asarray(b), act)
        np.testing.assert_allclose(
            a.get(), kernels.bias_act_reference(z, b, act), rtol=tol, atol=tol
        )
        d = kernels.act_backward(cp.asarray(z), a, act)
        np.testing.assert_allclose(
            d.get(), kernels.act_backward_reference(z, a.get(), act), rtol=tol, atol=tol
        )
    y = rng.integers(0, 17, size=(5, 33))
    w = rng.random((5, 33)).astype(dtype)
    loss, grad = kernels.softmax_xent(cp.asarray(z), cp.asarray(y), cp.asarray(w))
    rl, rg = kernels.softmax_xent_reference(z, y, w)
    np.testing.assert_allclose(loss.get(), rl, rtol=tol, atol=tol)
    np.testing.assert_allclose(grad.get(), rg, rtol=tol, atol=tol)
    assert loss.dtype == dtype and grad.dtype == dtype


def test_cupy_plumbing_with_a_stand_in_module(monkeypatch):
    """Without a GPU: the CuPy branch's builders (cupy.fuse over the same bodies, kernel names,
    argument order, dtype-typed scalars, tuple outputs) run against a stand-in ``cupy`` module
    whose ``fuse`` is the identity, and give the NumPy results."""

    fake = types.ModuleType("cupy")
    for name in ("maximum", "tanh"):
        setattr(fake, name, getattr(np, name))
    names = []

    def fuse(kernel_name=None):
        names.append(kernel_name)
        return lambda f: f

    fake.fuse = fuse
    monkeypatch.setitem(sys.modules, "cupy", fake)
    kernels._fused.cache_clear()
    try:
        rng = np.random.default_rng(0)
        z, b = rng.standard_normal((3, 4)), rng.standard_normal((1, 4))
        for act in kernels.ACTIVATIONS:
            np.testing.assert_array_equal(
                kernels._fused("bias_act", act)(z, b), kernels.bias_act_reference(z, b, act)
            )
            np.testing.assert_array_equal(
                kernels._fused("act_backward", act)(z, b), kernels.act_backward_reference(z, b, act)
            )
        assert "fedtheory_bias_act_relu" in names and "fedtheory_act_backward_tanh" in names
    finally:
        kernels._fused.cache_clear()


_HOST_PRELUDE = """
#include <cmath>
struct fedtheory_dim3 { long long x; };
static fedtheory_dim3 blockIdx, blockDim, threadIdx;
#define __global__
"""

_HOST_DRIVER = """
extern "C" void run_%(name)s(const %(T)s* z, const long long* y, const %(T)s* w, %(T)s* loss,
                          %(T)s* grad, long long rows, int classes) {
    blockDim.x = 32;
    for (long long b = 0; b * 32 < rows; ++b) {
        blockIdx.x = b;
        for (long long t = 0; t < 32; ++t) { threadIdx.x = t; %(name)s(z, y, w, loss, grad, rows, classes); }
    }
}
"""


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_softmax_raw_kernel_logic_on_the_host(dtype, tmp_path):
    """The .cu kernel body compiled as C++ for the CPU (CUDA's thread indices emulated by a loop
    over the grid), called through ctypes, against the NumPy reference: checks the kernel's
    arithmetic and indexing without a GPU."""

    cxx = shutil.which("g++") or shutil.which("c++")
    if cxx is None:
        pytest.skip("no C++ compiler on PATH: the kernel's host emulation was not built")
    name = "softmax_xent_f64" if dtype == np.float64 else "softmax_xent_f32"
    T = "double" if dtype == np.float64 else "float"
    src = tmp_path / "host.cpp"
    src.write_text(
        _HOST_PRELUDE
        + kernels.cuda_source("softmax_xent.cu")
        + _HOST_DRIVER % {"name": name, "T": T}
    )
    lib = tmp_path / "host.so"
    proc = subprocess.run(
        [cxx, "-O1", "-shared", "-fPIC", "-o", str(lib), str(src)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    fn = getattr(ctypes.CDLL(str(lib)), f"run_{name}")
    rng = np.random.default_rng(1)
    rows, C = 70, 7  # rows not a multiple of the block size: the bounds check matters
    z = (5 * rng.standard_normal((rows, C))).astype(dtype)
    y = rng.integers(0, C, size=rows).astype(np.int64)
    w = rng.random(rows).astype(dtype)
    loss = np.full(rows, np.nan, dtype=dtype)
    grad = np.full((rows, C), np.nan, dtype=dtype)
    ptr = np.ctypeslib.as_ctypes
    fn(ptr(z), ptr(y), ptr(w), ptr(loss), ptr(grad), ctypes.c_longlong(rows), ctypes.c_int(C))
    rl, rg = kernels.softmax_xent_reference(z, y, w)
    tol = 1e-12 if dtype == np.float64 else 2e-6
    np.testing.assert_allclose(loss, rl, rtol=tol, atol=tol)
    np.testing.assert_allclose(grad, rg, rtol=tol, atol=tol)
