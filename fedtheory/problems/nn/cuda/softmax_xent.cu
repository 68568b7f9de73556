// Row-wise softmax cross-entropy and its gradient, one thread per row.
//
// For every row r of a (rows, classes) block of logits z with integer label y_r and weight w_r:
//     loss[r]    = logsumexp(z_r) - z_r[y_r]                      (unweighted, per sample)
//     grad[r, c] = w_r * (softmax(z_r)[c] - 1{c == y_r})          (weighted gradient)
// computed with the max-shift m = max_c z_r[c] so exp never overflows (Goodfellow, Bengio and
// Courville, Deep Learning, 2016, Section 4.1). The NumPy reference is
// fedtheory.nn.kernels.softmax_xent_reference; the two agree to rounding (tests/test_nn_kernels.py).
//
// Loaded by fedtheory.nn.kernels with cupy.RawKernel (compiled by NVRTC, so no #include); the
// test suite also compiles this file with nvcc when nvcc is on the machine.

#define FEDTHEORY_SOFTMAX_XENT(NAME, T, EXP, LOG)                                      \
    extern "C" __global__ void NAME(const T* __restrict__ logits,                      \
                                    const long long* __restrict__ labels,              \
                                    const T* __restrict__ weights,                     \
                                    T* __restrict__ loss,                              \
                                    T* __restrict__ grad,                              \
                                    const long long rows,                              \
                                    const int classes) {                               \
        const long long r = (long long)blockIdx.x * blockDim.x + threadIdx.x;          \
        if (r >= rows) return;                                                         \
        const T* z = logits + r * classes;                                             \
        T* g = grad + r * classes;                                                     \
        T m = z[0];                                                                    \
        for (int c = 1; c < classes; ++c) m = z[c] > m ? z[c] : m;                     \
        T s = (T)0;                                                                    \
        for (int c = 0; c < classes; ++c) s += EXP(z[c] - m);                          \
        const long long y = labels[r];                                                 \
        loss[r] = m + LOG(s) - z[y];                                                   \
        const T w = weights[r];                                                        \
        const T ws = w / s;                                                            \
        for (int c = 0; c < classes; ++c) g[c] = ws * EXP(z[c] - m);                   \
        g[y] -= w;                                                                     \
    }

FEDTHEORY_SOFTMAX_XENT(softmax_xent_f64, double, exp, log)
FEDTHEORY_SOFTMAX_XENT(softmax_xent_f32, float, expf, logf)
