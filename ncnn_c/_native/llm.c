/* The transformer decoders' small layers as steps of the native CPU plan
   (ncnn_c/net/native/ops/transformer.py), each the numpy layer's arithmetic in one pass:

   * rmsnorm: rows of n values, y = (x * (1 / sqrt(mean(x^2) + eps))) * gamma (gamma NULL:
     none), ncnn_c/layer/rmsnorm.py's order of operations; the sum of squares in eight
     float lanes (numpy's pairwise sum differs only in rounding);
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

void ncnnc_rmsnorm(const void *vctx, void *const *ptrs)
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
}

void ncnnc_rope(const void *vctx, void *const *ptrs)
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
}
