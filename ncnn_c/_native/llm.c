/* The transformer decoders' small layers as steps of the native CPU plan
   (ncnn_c/net/native/ops/transformer.py), each the numpy layer's arithmetic in one pass:

   * rmsnorm: rows of n values, y = (x * (1 / sqrt(mean(x^2) + eps))) * gamma (gamma NULL:
     none), ncnn_c/layer/rmsnorm.py's order of operations; the sum of squares in eight
     float lanes (numpy's pairwise sum differs only in rounding);
   * gemv: y = alpha * (W x + bias) for one row x of K values and row-major W (N, K), the
     rows of W split over the threads (a decode step's Gemm: it streams the weights once, so
     its speed is the memory's; oneDNN's GEMM reaches about two thirds of it at M = 1);
   * rope: x (heads, seqlen, dim), cos / sin rows of cos_stride floats (position t at row t,
     one value per pair), each pair (x0, x1) -> (x0 cos - x1 sin, x0 sin + x1 cos); the pairs
     are the row's halves, or neighbours with interleaved (ncnn_c/layer/rotaryembed.py).

   A step is called by plan.c with its context and its memories' data pointers, on the
   thread count plan.c set for the run; a loop splits over threads only when it is large
   enough to pay for waking them (a decode step's rows are one token's). */
#include <math.h>
#include <stdint.h>

const char ncnnc_llm_build_stamp[] = "NCNNC_STAMP:@STAMP@";

typedef struct {
    int64_t rows;
    int64_t n;
    float eps;
    const float *gamma;
} ncnnc_rmsnorm_ctx;

typedef struct {
    int64_t heads;
    int64_t seqlen;
    int64_t dim;
    int64_t cos_stride;
    int interleaved;
} ncnnc_rope_ctx;

typedef struct {
    int64_t n;
    int64_t k;
    const float *w;
    const float *bias;
    float alpha;
} ncnnc_gemv_ctx;

/* below this many values one thread is done before another one wakes */
#define PARALLEL_MIN 65536

static float sum_squares(const float *x, int64_t n)
{
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++)
            acc[j] += x[i + j] * x[i + j];
    float s = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
    for (; i < n; i++)
        s += x[i] * x[i];
    return s;
}

int ncnnc_rmsnorm(const void *vctx, void *const *ptrs)
{
    const ncnnc_rmsnorm_ctx *c = (const ncnnc_rmsnorm_ctx *)vctx;
    const float *src = (const float *)ptrs[0];
    float *dst = (float *)ptrs[1];
    const int64_t rows = c->rows, n = c->n;
#pragma omp parallel for schedule(static) if (rows * n >= PARALLEL_MIN && rows > 1)
    for (int64_t r = 0; r < rows; r++) {
        const float *x = src + r * n;
        float *y = dst + r * n;
        float a = 1.0f / sqrtf(sum_squares(x, n) / (float)n + c->eps);
        if (c->gamma) {
            for (int64_t i = 0; i < n; i++)
                y[i] = (x[i] * a) * c->gamma[i];
        } else {
            for (int64_t i = 0; i < n; i++)
                y[i] = x[i] * a;
        }
    }
    return 0;
}

int ncnnc_rope(const void *vctx, void *const *ptrs)
{
    const ncnnc_rope_ctx *c = (const ncnnc_rope_ctx *)vctx;
    const float *src = (const float *)ptrs[0];
    const float *cosv = (const float *)ptrs[1];
    const float *sinv = (const float *)ptrs[2];
    float *dst = (float *)ptrs[3];
    const int64_t rows = c->heads * c->seqlen, dim = c->dim, half = dim / 2;
    const int64_t step = c->interleaved ? 2 : 1, second = c->interleaved ? 1 : half;
#pragma omp parallel for schedule(static) if (rows * dim >= PARALLEL_MIN && rows > 1)
    for (int64_t r = 0; r < rows; r++) {
        const float *x = src + r * dim;
        float *y = dst + r * dim;
        const float *cs = cosv + (r % c->seqlen) * c->cos_stride;
        const float *sn = sinv + (r % c->seqlen) * c->cos_stride;
        for (int64_t j = 0; j < half; j++) {
            float x0 = x[j * step], x1 = x[j * step + second];
            y[j * step] = x0 * cs[j] - x1 * sn[j];
            y[j * step + second] = x0 * sn[j] + x1 * cs[j];
        }
    }
    return 0;
}

/* four rows of W against x: four running sums, vectorised by the compiler (omp simd lets it
   reorder the additions), one body per instruction set picked when the library loads (x86-64;
   elsewhere the one baseline body, aarch64's NEON included) */
#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
static void gemv_rows(const float *w, const float *x, float *y, int64_t n0, int64_t n1, int64_t k)
{
    int64_t r = n0;
    for (; r + 4 <= n1; r += 4) {
        const float *w0 = w + r * k, *w1 = w0 + k, *w2 = w1 + k, *w3 = w2 + k;
        float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
#pragma omp simd reduction(+ : a0, a1, a2, a3)
        for (int64_t i = 0; i < k; i++) {
            a0 += w0[i] * x[i];
            a1 += w1[i] * x[i];
            a2 += w2[i] * x[i];
            a3 += w3[i] * x[i];
        }
        y[r] = a0;
        y[r + 1] = a1;
        y[r + 2] = a2;
        y[r + 3] = a3;
    }
    for (; r < n1; r++) {
        const float *w0 = w + r * k;
        float a0 = 0.0f;
#pragma omp simd reduction(+ : a0)
        for (int64_t i = 0; i < k; i++)
            a0 += w0[i] * x[i];
        y[r] = a0;
    }
}

int ncnnc_gemv(const void *vctx, void *const *ptrs)
{
    const ncnnc_gemv_ctx *c = (const ncnnc_gemv_ctx *)vctx;
    const float *x = (const float *)ptrs[0];
    float *y = (float *)ptrs[1];
    const int64_t n = c->n, blocks = (n + 15) / 16;
#pragma omp parallel for schedule(static) if (n * c->k >= PARALLEL_MIN)
    for (int64_t b = 0; b < blocks; b++) {
        int64_t n0 = b * 16, n1 = n0 + 16 < n ? n0 + 16 : n;
        gemv_rows(c->w, x, y, n0, n1, c->k);
        for (int64_t r = n0; r < n1; r++) {
            float v = c->bias ? y[r] + c->bias[r] : y[r];
            y[r] = c->alpha == 1.0f ? v : v * c->alpha;
        }
    }
    return 0;
}
