/* The transformer decoders' small layers as steps of the native CPU plan
   (ncnn_c/net/native/ops/transformer.py), each the numpy layer's arithmetic in one pass:

   * rmsnorm: rows of n values, y = (x * (1 / sqrt(mean(x^2) + eps))) * gamma (gamma NULL:
     none), ncnn_c/layer/rmsnorm.py's order of operations; the sum of squares in eight
     float lanes (numpy's pairwise sum differs only in rounding);
   * gemv: y = alpha * (W x + bias) for one row x of K values and row-major W (N, K), the
     rows of W split over the threads (a decode step's Gemm: it streams the weights once, so
     its speed is the memory's; oneDNN's GEMM reaches about two thirds of it at M = 1);
   * gemm16: y = alpha * (x W^T + bias) for m rows x of K values and W (N, K) of fp16
     values (an fp16-stored .bin's, ncnn_c/layer/gemm.py), in blocks of 4 rows (below): each
     weight converted to fp32 as it is read (vcvtph2ps on AVX-512 or AVX2 + F16C, a plain
     conversion elsewhere), fp32 products and sums (fused multiply-adds where the CPU has
     them). One row reads the half-size weights once (a decode step: half the bytes of the fp32 GEMV); several rows
     convert each block once into a per-thread fp32 tile and run every x row against it;
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

/* The fp16 weights come in blocks of 4 rows (ncnn_c/net/native/ops/transformer.py,
   blocks16): block b holds rows 4b..4b+3 (zeros past n) as k / 16 chunks of 4 x 16 values
   (each chunk the 4 rows' next 16 columns), then the k % 16 last columns of each row in turn;
   4 * k values a block. One stream per block instead of four: a single core fetched the
   interleaved rows at 23 GB/s against 10 for four row streams (2-core VM, AMD EPYC).

   dot4: the 4 rows of a block against x (k values), into out; unblock4: a block into 4
   fp32 rows of k values. One body per instruction set: AVX-512 (16 lanes) and AVX2 + F16C
   + FMA (8 lanes) convert with vcvtph2ps, the plain body with h2f. */
static void dot4_plain(const uint16_t *w, const float *x, int64_t k, float *out)
{
    const int64_t k16 = k & ~(int64_t)15, tail = k - k16;
    float a[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int64_t i = 0; i < k16; i += 16, w += 64)
        for (int q = 0; q < 4; q++)
            for (int j = 0; j < 16; j++)
                a[q] += h2f(w[q * 16 + j]) * x[i + j];
    for (int q = 0; q < 4; q++) {
        for (int64_t j = 0; j < tail; j++)
            a[q] += h2f(w[q * tail + j]) * x[k16 + j];
        out[q] = a[q];
    }
}

static void unblock4_plain(const uint16_t *w, float *t, int64_t k)
{
    const int64_t k16 = k & ~(int64_t)15, tail = k - k16;
    for (int64_t i = 0; i < k16; i += 16, w += 64)
        for (int q = 0; q < 4; q++)
            for (int j = 0; j < 16; j++)
                t[q * k + i + j] = h2f(w[q * 16 + j]);
    for (int q = 0; q < 4; q++)
        for (int64_t j = 0; j < tail; j++)
            t[q * k + k16 + j] = h2f(w[q * tail + j]);
}

/* the columns past the last whole chunk, and the finished sums */
static void dot4_tail(const uint16_t *w, const float *x, int64_t k16, int64_t tail, float *a, float *out)
{
    for (int q = 0; q < 4; q++) {
        for (int64_t j = 0; j < tail; j++)
            a[q] += h2f(w[q * tail + j]) * x[k16 + j];
        out[q] = a[q];
    }
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

__attribute__((target("avx512f"))) static void dot4_avx512(const uint16_t *w, const float *x, int64_t k,
                                                            float *out)
{
    const int64_t k16 = k & ~(int64_t)15;
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    for (int64_t i = 0; i < k16; i += 16, w += 64) {
        const __m512 xv = _mm512_loadu_ps(x + i);
        a0 = _mm512_fmadd_ps(_mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)w)), xv, a0);
        a1 = _mm512_fmadd_ps(_mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(w + 16))), xv, a1);
        a2 = _mm512_fmadd_ps(_mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(w + 32))), xv, a2);
        a3 = _mm512_fmadd_ps(_mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(w + 48))), xv, a3);
    }
    float a[4] = {_mm512_reduce_add_ps(a0), _mm512_reduce_add_ps(a1), _mm512_reduce_add_ps(a2),
                  _mm512_reduce_add_ps(a3)};
    dot4_tail(w, x, k16, k - k16, a, out);
}

__attribute__((target("avx512f"))) static void unblock4_avx512(const uint16_t *w, float *t, int64_t k)
{
    const int64_t k16 = k & ~(int64_t)15, tail = k - k16;
    for (int64_t i = 0; i < k16; i += 16, w += 64)
        for (int q = 0; q < 4; q++)
            _mm512_storeu_ps(t + q * k + i, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(w + q * 16))));
    for (int q = 0; q < 4; q++)
        for (int64_t j = 0; j < tail; j++)
            t[q * k + k16 + j] = h2f(w[q * tail + j]);
}

__attribute__((target("avx2,fma,f16c"))) static inline float hsum256(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
    return _mm_cvtss_f32(s);
}

__attribute__((target("avx2,fma,f16c"))) static void dot4_avx2(const uint16_t *w, const float *x, int64_t k,
                                                                float *out)
{
    const int64_t k16 = k & ~(int64_t)15;
    __m256 acc[8];
    for (int q = 0; q < 8; q++)
        acc[q] = _mm256_setzero_ps();
    for (int64_t i = 0; i < k16; i += 16, w += 64) {
        const __m256 x0 = _mm256_loadu_ps(x + i), x1 = _mm256_loadu_ps(x + i + 8);
        for (int q = 0; q < 4; q++) {
            const __m128i *h = (const __m128i *)(w + q * 16);
            acc[2 * q] = _mm256_fmadd_ps(_mm256_cvtph_ps(_mm_loadu_si128(h)), x0, acc[2 * q]);
            acc[2 * q + 1] = _mm256_fmadd_ps(_mm256_cvtph_ps(_mm_loadu_si128(h + 1)), x1, acc[2 * q + 1]);
        }
    }
    float a[4];
    for (int q = 0; q < 4; q++)
        a[q] = hsum256(_mm256_add_ps(acc[2 * q], acc[2 * q + 1]));
    dot4_tail(w, x, k16, k - k16, a, out);
}

__attribute__((target("avx2,fma,f16c"))) static void unblock4_avx2(const uint16_t *w, float *t, int64_t k)
{
    const int64_t k16 = k & ~(int64_t)15, tail = k - k16;
    for (int64_t i = 0; i < k16; i += 16, w += 64)
        for (int q = 0; q < 4; q++) {
            const __m128i *h = (const __m128i *)(w + q * 16);
            _mm256_storeu_ps(t + q * k + i, _mm256_cvtph_ps(_mm_loadu_si128(h)));
            _mm256_storeu_ps(t + q * k + i + 8, _mm256_cvtph_ps(_mm_loadu_si128(h + 1)));
        }
    for (int q = 0; q < 4; q++)
        for (int64_t j = 0; j < tail; j++)
            t[q * k + k16 + j] = h2f(w[q * tail + j]);
}
#endif

typedef void (*dot4_fn)(const uint16_t *, const float *, int64_t, float *);
typedef void (*unblock4_fn)(const uint16_t *, float *, int64_t);

static void pick16(dot4_fn *dot, unblock4_fn *unblock)
{
    *dot = dot4_plain;
    *unblock = unblock4_plain;
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) {
        *dot = dot4_avx512;
        *unblock = unblock4_avx512;
    } else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
               __builtin_cpu_supports("f16c")) {
        *dot = dot4_avx2;
        *unblock = unblock4_avx2;
    }
#endif
}

/* fp32 dot products of four tile rows with x (the compiler vectorises; omp simd lets it
   reorder the sums) */
#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
static void dot4_f32(const float *t, const float *x, int64_t k, float *out)
{
    const float *t0 = t, *t1 = t0 + k, *t2 = t1 + k, *t3 = t2 + k;
    float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
#pragma omp simd reduction(+ : a0, a1, a2, a3)
    for (int64_t i = 0; i < k; i++) {
        a0 += t0[i] * x[i];
        a1 += t1[i] * x[i];
        a2 += t2[i] * x[i];
        a3 += t3[i] * x[i];
    }
    out[0] = a0;
    out[1] = a1;
    out[2] = a2;
    out[3] = a3;
}

int ncnnc_gemm16(const void *vctx, void *const *ptrs)
{
    const ncnnc_gemm16_ctx *c = (const ncnnc_gemm16_ctx *)vctx;
    const float *x = (const float *)ptrs[0];
    float *y = (float *)ptrs[1];
    const int64_t m = c->m, n = c->n, k = c->k, blocks = (n + 3) / 4;
    dot4_fn dot;
    unblock4_fn unblock;
    pick16(&dot, &unblock);
    int failed = 0;
#pragma omp parallel if (m * n * k >= PARALLEL_MIN * 4)
    {
        float *tile = m > 1 ? (float *)malloc((size_t)(4 * k) * sizeof(float)) : NULL;
        if (m > 1 && !tile) {
#pragma omp atomic write
            failed = 1;
        }
#pragma omp for schedule(static)
        for (int64_t b = 0; b < blocks; b++) {
            if (m > 1 && !tile)
                continue;
            const uint16_t *wb = c->w + b * 4 * k;
            const int64_t r0 = b * 4, rows = n - r0 < 4 ? n - r0 : 4;
            float got[4];
            if (m > 1)
                unblock(wb, tile, k);
            for (int64_t j = 0; j < m; j++) {
                if (m > 1)
                    dot4_f32(tile, x + j * k, k, got);
                else
                    dot(wb, x, k, got);
                for (int64_t q = 0; q < rows; q++) {
                    const int64_t r = r0 + q;
                    float v = c->bias ? got[q] + c->bias[r] : got[q];
                    y[j * n + r] = c->alpha == 1.0f ? v : v * c->alpha;
                }
            }
        }
        free(tile);
    }
    return failed ? -1 : 0;
}

/* the plain conversion, for the tests: every fp16 value against numpy's */
float ncnnc_half_to_float(uint16_t h)
{
    return h2f(h);
}
