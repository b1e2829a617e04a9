/* The transformer decoders' small layers as steps of the native CPU plan
   (ncnn_c/net/native/ops/transformer.py), each the numpy layer's arithmetic in one pass:

   * rmsnorm: rows of n values, y = (x * (1 / sqrt(mean(x^2) + eps))) * gamma (gamma NULL:
     none), ncnn_c/layer/rmsnorm.py's order of operations; the sum of squares in eight
     float lanes (numpy's pairwise sum differs only in rounding);
   * gemv: y = alpha * (W x + bias) for one row x of K values and row-major W (N, K), the
     rows of W split over the threads (a decode step's Gemm: it streams the weights once, so
     its speed is the memory's; oneDNN's GEMM reaches about two thirds of it at M = 1);
   * gemm16: y = alpha * (x W^T + bias) for m rows x of K values and W (N, K) of fp16
     values (an fp16-stored .bin's, ncnn_c/layer/gemm.py), in panels of 16 rows (below): each
     weight converted to fp32 as it is read (vcvtph2ps on AVX-512 or AVX2 + F16C, a plain
     conversion elsewhere), fp32 products and sums (fused multiply-adds where the CPU has
     them). One row reads the half-size weights once (a decode step: half the bytes of the
     fp32 GEMV); a prefill's rows share each converted column;
   * rope: x (heads, seqlen, dim), cos / sin rows of cos_stride floats (position t at row t,
     one value per pair), each pair (x0, x1) -> (x0 cos - x1 sin, x0 sin + x1 cos); the pairs
     are the row's halves, or neighbours with interleaved (ncnn_c/layer/rotaryembed.py).

   A step is called by plan.c with its context and its memories' data pointers, on the
   thread count plan.c set for the run; a loop splits over threads only when it is large
   enough to pay for waking them (a decode step's rows are one token's). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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

typedef struct {
    int64_t m;
    int64_t n;
    int64_t k;
    const uint16_t *w;
    const float *bias;
    float alpha;
} ncnnc_gemm16_ctx;

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

/* fp16 bits -> float, for CPUs without F16C (and the tails of the vector loops) */
static float h2f(uint16_t h)
{
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
    uint32_t bits;
    if (exp == 0x1fu) {
        bits = sign | 0x7f800000u | (man << 13); /* inf, nan */
    } else if (exp != 0) {
        bits = sign | ((exp + 112u) << 23) | (man << 13);
    } else if (man == 0) {
        bits = sign;
    } else { /* subnormal: normalise */
        int e = -1;
        uint32_t m = man;
        do {
            e++;
            m <<= 1;
        } while (!(m & 0x400u));
        bits = sign | ((uint32_t)(112 - e) << 23) | ((m & 0x3ffu) << 13);
    }
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* The fp16 weights come in panels of 16 rows (ncnn_c/layer/gemm.py, panels16): panel p
   holds rows 16p..16p+15 (zeros past n) column by column, k columns of 16 values. A panel is
   one stream (a single core fetched one stream at 23 GB/s against 10 for four row streams,
   2-core VM, AMD EPYC), and each column's 16 values are one vector: every x row of a chunk
   multiplies it by its value of that column (an outer product, no horizontal sums), so one
   row (a decode step) and a prefill's rows read the weights the same way. Each output is a
   sum over k in order by one thread, whatever the thread count.

   panel_MB: the first MB rows of x (row stride k) against one panel, into y (row stride ldy,
   the panel's `cols` <= 16 columns). One body per instruction set and chunk size: AVX-512
   (a vector a column, MB up to 16), AVX2 + F16C + FMA (two, MB up to 4), plain C. */
static void panel_plain(const uint16_t *w, const float *x, int64_t k, int mb, float *y, int64_t ldy, int cols)
{
    float acc[16][16];
    for (int j = 0; j < mb; j++)
        for (int q = 0; q < 16; q++)
            acc[j][q] = 0.0f;
    for (int64_t i = 0; i < k; i++, w += 16)
        for (int j = 0; j < mb; j++) {
            const float xv = x[j * k + i];
            for (int q = 0; q < 16; q++)
                acc[j][q] += h2f(w[q]) * xv;
        }
    for (int j = 0; j < mb; j++)
        for (int q = 0; q < cols; q++)
            y[j * ldy + q] = acc[j][q];
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define PANEL512(MB)                                                                                       \
    __attribute__((target("avx512f"))) static void panel512_##MB(const uint16_t *w, const float *x, int64_t k, \
                                                                  float *y, int64_t ldy, int cols)         \
    {                                                                                                      \
        __m512 acc[MB];                                                                                    \
        for (int j = 0; j < MB; j++)                                                                       \
            acc[j] = _mm512_setzero_ps();                                                                  \
        for (int64_t i = 0; i < k; i++, w += 16) {                                                         \
            const __m512 wv = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)w));                     \
            for (int j = 0; j < MB; j++)                                                                   \
                acc[j] = _mm512_fmadd_ps(_mm512_set1_ps(x[j * k + i]), wv, acc[j]);                       \
        }                                                                                                  \
        const __mmask16 keep = (__mmask16)((1u << cols) - 1u);                                             \
        for (int j = 0; j < MB; j++)                                                                       \
            _mm512_mask_storeu_ps(y + j * ldy, keep, acc[j]);                                              \
    }
PANEL512(1)
PANEL512(2)
PANEL512(4)
PANEL512(8)

/* 16 rows of x given transposed (xt: k columns of 16 values): each broadcast from one base
   pointer, so the 16 accumulators leave the general registers to the loop */
__attribute__((target("avx512f"))) static void panel512_t16(const uint16_t *w, const float *xt, int64_t k,
                                                             float *y, int64_t ldy, int cols)
{
    __m512 acc[16];
    for (int j = 0; j < 16; j++)
        acc[j] = _mm512_setzero_ps();
    for (int64_t i = 0; i < k; i++, w += 16, xt += 16) {
        const __m512 wv = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)w));
        for (int j = 0; j < 16; j++)
            acc[j] = _mm512_fmadd_ps(_mm512_set1_ps(xt[j]), wv, acc[j]);
    }
    const __mmask16 keep = (__mmask16)((1u << cols) - 1u);
    for (int j = 0; j < 16; j++)
        _mm512_mask_storeu_ps(y + j * ldy, keep, acc[j]);
}

#define PANEL256(MB)                                                                                       \
    __attribute__((target("avx2,fma,f16c"))) static void panel256_##MB(const uint16_t *w, const float *x,     \
                                                                        int64_t k, float *y, int64_t ldy,  \
                                                                        int cols)                          \
    {                                                                                                      \
        __m256 lo[MB], hi[MB];                                                                             \
        for (int j = 0; j < MB; j++)                                                                       \
            lo[j] = hi[j] = _mm256_setzero_ps();                                                           \
        for (int64_t i = 0; i < k; i++, w += 16) {                                                         \
            const __m256 w0 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)w));                        \
            const __m256 w1 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(w + 8)));                  \
            for (int j = 0; j < MB; j++) {                                                                 \
                const __m256 xv = _mm256_set1_ps(x[j * k + i]);                                            \
                lo[j] = _mm256_fmadd_ps(xv, w0, lo[j]);                                                    \
                hi[j] = _mm256_fmadd_ps(xv, w1, hi[j]);                                                    \
            }                                                                                              \
        }                                                                                                  \
        for (int j = 0; j < MB; j++) {                                                                     \
            float t[16];                                                                                   \
            _mm256_storeu_ps(t, lo[j]);                                                                    \
            _mm256_storeu_ps(t + 8, hi[j]);                                                                \
            for (int q = 0; q < cols; q++)                                                                 \
                y[j * ldy + q] = t[q];                                                                     \
        }                                                                                                  \
    }
PANEL256(1)
PANEL256(2)
PANEL256(4)
#endif

static int isa16(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f"))
        return 2;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c"))
        return 1;
#endif
    return 0;
}

/* all m rows of x against one panel: chunks of the largest size the instruction set has;
   xt: x's whole 16-row chunks transposed (chunk c at xt + c * 16 * k), or NULL */
static void panel_rows(int isa, const uint16_t *w, const float *x, const float *xt, int64_t m, int64_t k,
                       float *y, int64_t ldy, int cols)
{
    int64_t j = 0;
#if defined(__x86_64__) && defined(__GNUC__)
    if (isa == 2) {
        for (; xt && j + 16 <= m; j += 16)
            panel512_t16(w, xt + j * k, k, y + j * ldy, ldy, cols);
        for (; j + 8 <= m; j += 8)
            panel512_8(w, x + j * k, k, y + j * ldy, ldy, cols);
        for (; j + 4 <= m; j += 4)
            panel512_4(w, x + j * k, k, y + j * ldy, ldy, cols);
        for (; j + 2 <= m; j += 2)
            panel512_2(w, x + j * k, k, y + j * ldy, ldy, cols);
        for (; j < m; j++)
            panel512_1(w, x + j * k, k, y + j * ldy, ldy, cols);
        return;
    }
    if (isa == 1) {
        for (; j + 4 <= m; j += 4)
            panel256_4(w, x + j * k, k, y + j * ldy, ldy, cols);
        for (; j + 2 <= m; j += 2)
            panel256_2(w, x + j * k, k, y + j * ldy, ldy, cols);
        for (; j < m; j++)
            panel256_1(w, x + j * k, k, y + j * ldy, ldy, cols);
        return;
    }
#endif
    (void)isa;
    (void)xt;
    for (; j < m; j += 16) {
        const int mb = m - j < 16 ? (int)(m - j) : 16;
        panel_plain(w, x + j * k, k, mb, y + j * ldy, ldy, cols);
    }
}

int ncnnc_gemm16(const void *vctx, void *const *ptrs)
{
    const ncnnc_gemm16_ctx *c = (const ncnnc_gemm16_ctx *)vctx;
    const float *x = (const float *)ptrs[0];
    float *y = (float *)ptrs[1];
    const int64_t m = c->m, n = c->n, k = c->k, panels = (n + 15) / 16;
    const int isa = isa16();
    /* AVX-512, 16 rows or more: each whole chunk of 16 rows transposed once for every panel */
    const int64_t whole = isa == 2 ? m / 16 : 0;
    float *xt = whole ? (float *)malloc((size_t)(whole * 16 * k) * sizeof(float)) : NULL;
    for (int64_t ch = 0; xt && ch < whole; ch++)
        for (int64_t i = 0; i < k; i++)
            for (int j = 0; j < 16; j++)
                xt[ch * 16 * k + i * 16 + j] = x[(ch * 16 + j) * k + i];
#pragma omp parallel for schedule(static) if (m * n * k >= PARALLEL_MIN * 4)
    for (int64_t p = 0; p < panels; p++) {
        const int64_t r0 = p * 16;
        const int cols = n - r0 < 16 ? (int)(n - r0) : 16;
        panel_rows(isa, c->w + p * 16 * k, x, xt, m, k, y + r0, n, cols);
        for (int64_t j = 0; j < m; j++)
            for (int q = 0; q < cols; q++) {
                float *o = y + j * n + r0 + q;
                const float v = c->bias ? *o + c->bias[r0 + q] : *o;
                *o = c->alpha == 1.0f ? v : v * c->alpha;
            }
    }
    free(xt);
    return 0;
}

/* float -> fp16 bits when the value is an fp16 one (no rounding needed), else -1 (NaN: -1) */
static int32_t f2h_exact(float f)
{
    uint32_t b;
    memcpy(&b, &f, sizeof b);
    const uint32_t sign = (b >> 16) & 0x8000u, exp = (b >> 23) & 0xffu, man = b & 0x7fffffu;
    if (exp == 0xffu)
        return man ? -1 : (int32_t)(sign | 0x7c00u); /* inf */
    if (exp == 0 && man == 0)
        return (int32_t)sign;
    const int e = (int)exp - 127;
    if (e >= -14 && e <= 15) { /* a normal fp16 */
        if (man & 0x1fffu)
            return -1;
        return (int32_t)(sign | (uint32_t)(e + 15) << 10 | man >> 13);
    }
    if (e >= -24 && e < -14 && exp != 0) { /* an fp16 subnormal: (1.man) * 2^e = m * 2^-24 */
        const int shift = -14 - e; /* 1..10 */
        const uint32_t full = 0x800000u | man;
        if (full & ((1u << (13 + shift)) - 1u))
            return -1;
        return (int32_t)(sign | full >> (13 + shift));
    }
    return -1;
}

/* one row's k values into column q of a panel (o[i * 16 + q]): 1 when every value is an fp16
   one. The vector bodies convert 16 or 8 values at a time and convert them back to compare
   (a NaN compares unequal: not exact, as f2h_exact says) */
static int row_plain(const float *w, int64_t k, uint16_t *o)
{
    for (int64_t i = 0; i < k; i++) {
        const int32_t h = f2h_exact(w[i]);
        if (h < 0)
            return 0;
        o[i * 16] = (uint16_t)h;
    }
    return 1;
}

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx512f"))) static int row_avx512(const float *w, int64_t k, uint16_t *o)
{
    int64_t i = 0;
    for (; i + 16 <= k; i += 16) {
        const __m512 v = _mm512_loadu_ps(w + i);
        const __m256i h = _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        if (_mm512_cmp_ps_mask(_mm512_cvtph_ps(h), v, _CMP_NEQ_UQ))
            return 0;
        uint16_t t[16];
        _mm256_storeu_si256((__m256i *)t, h);
        for (int j = 0; j < 16; j++)
            o[(i + j) * 16] = t[j];
    }
    return row_plain(w + i, k - i, o + i * 16);
}

__attribute__((target("avx2,f16c"))) static int row_avx2(const float *w, int64_t k, uint16_t *o)
{
    int64_t i = 0;
    for (; i + 8 <= k; i += 8) {
        const __m256 v = _mm256_loadu_ps(w + i);
        const __m128i h = _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        if (_mm256_movemask_ps(_mm256_cmp_ps(_mm256_cvtph_ps(h), v, _CMP_NEQ_UQ)))
            return 0;
        uint16_t t[8];
        _mm_storeu_si128((__m128i *)t, h);
        for (int j = 0; j < 8; j++)
            o[(i + j) * 16] = t[j];
    }
    return row_plain(w + i, k - i, o + i * 16);
}
#endif

/* W (n, k) fp32 into panels16's layout (ncnn_c/layer/gemm.py): 1 when every value is an fp16
   one (out then holds them all), 0 when one is not (out is partly written) */
int ncnnc_panels16(const float *w, int64_t n, int64_t k, uint16_t *out)
{
    const int64_t panels = (n + 15) / 16;
    const int isa = isa16();
    int exact = 1;
#pragma omp parallel for schedule(static) if (n * k >= PARALLEL_MIN * 16)
    for (int64_t p = 0; p < panels; p++) {
        if (!exact)
            continue;
        uint16_t *o = out + p * 16 * k;
        for (int q = 0; q < 16; q++) {
            const int64_t r = p * 16 + q;
            int ok = 1;
            if (r >= n) {
                for (int64_t i = 0; i < k; i++)
                    o[i * 16 + q] = 0;
            } else if (isa == 2) {
#if defined(__x86_64__) && defined(__GNUC__)
                ok = row_avx512(w + r * k, k, o + q);
#endif
            } else if (isa == 1) {
#if defined(__x86_64__) && defined(__GNUC__)
                ok = row_avx2(w + r * k, k, o + q);
#endif
            } else {
                ok = row_plain(w + r * k, k, o + q);
            }
            if (!ok) {
#pragma omp atomic write
                exact = 0;
                break;
            }
        }
    }
    return exact;
}

/* the plain conversion, for the tests: every fp16 value against numpy's */
float ncnnc_half_to_float(uint16_t h)
{
    return h2f(h);
}
