/* ncnn's int8 arithmetic as steps of the native CPU plan (ncnn_c/net/native/ops/int8.py), in
   the same float operations as the numpy forms (ncnn_c/layer/_int8.py), so that a plan gives
   bit for bit what the numpy layers give:

   * quantize: float2int8(x * scale) of an fp32 blob in any layout (one scale for the blob):
     round half away from zero as trunc(v + copysign(0.5, v)) in fp32, NaN and |v| >= 2^31 to
     -127 (the cvttps result INT_MIN, saturated), saturate to [-127, 127];
   * dequantize: the int32 sums of a convolution / inner product in a channels-last layout
     (pixels x channels): (float)(acc * scale_in[c] + bias[c]) computed in double as numpy does
     (the product is exact there, so only the sum and the cast round), ncnn's fused activation
     (none, ReLU, LeakyReLU, Clip), then either fp32 out or, with a top scale,
     float2int8(v * top_scale) out (ncnn's requantize);
   * channels: the Quantize / Dequantize / Requantize layers with a scale (bias, output scale)
     per channel, in any layout of their blob: memory seen as [outer][groups][inner][block]
     where the element (o, g, i, k) belongs to channel g * block + k (plain: groups = channels,
     block 1; channels-last: block = channels; oneDNN's blocked aBcd16b: block 16), each op in
     the numpy layer's operations: quantize float2int8(x * scale[c]); dequantize
     (float)((double)(float)acc * scale_in[c] + bias[c]); requantize that, activated, then
     float2int8(v * scale_out[c]) in fp32.

   A step is called by plan.c with its context and its memories' data pointers; the loops are
   OpenMP's, with the thread count plan.c set for the run. Each loop has an AVX-512 body
   (picked at run time) and a scalar one. Built with -ffp-contract=off: a contracted
   multiply-add would round differently from numpy. */
#include <math.h>
#include <stdint.h>

const char ncnnc_int8_build_stamp[] = "NCNNC_STAMP:@STAMP@";

typedef struct {
    int64_t n;   /* elements (a blocked layout's padding included: it quantizes to 0) */
    float scale;
} ncnnc_quantize_ctx;

typedef struct {
    int64_t pixels;     /* rows of the channels-last layout */
    int64_t channels;   /* innermost */
    const float *scale_in; /* per channel */
    const float *bias;     /* per channel, or NULL */
    int act;            /* ncnn activation_type: 0 none, 1 ReLU, 2 LeakyReLU, 3 Clip */
    float a0, a1;       /* its params */
    float top_scale;    /* > 0: requantize to int8 with it; 0: fp32 out */
} ncnnc_dequantize_ctx;

typedef struct {
    int64_t outer, groups, inner, block; /* the layout: see the top of the file */
    const float *scale;     /* per channel (groups * block): quantize's scale, or scale_in */
    const float *bias;      /* per channel, or NULL */
    const float *scale_out; /* requantize: per channel */
    int op;                 /* 0 quantize f32 -> s8, 1 dequantize s32 -> f32, 2 requantize s32 -> s8 */
    int act;                /* as ncnnc_dequantize_ctx */
    float a0, a1;
} ncnnc_channels_ctx;

static int scalar_only; /* tests: run the portable bodies on an AVX-512 CPU too */

void ncnnc_int8_scalar_only(int on)
{
    scalar_only = on;
}

static inline int8_t float2int8(float v)
{
    float t = truncf(v + copysignf(0.5f, v));
    if (!(fabsf(t) < 2147483648.f))
        return -127;
    if (t > 127.f)
        return 127;
    if (t < -127.f)
        return -127;
    return (int8_t)t;
}

#define CHUNK 4096

/* AVX-512 bodies (16 lanes, the same operations: cvttps gives INT_MIN for NaN and overflow,
   which the saturation turns into -127), picked at run time; the scalar loops elsewhere */
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HAVE_AVX512 1
#define AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq")))

AVX512 static inline __m128i float2int8_16(__m512 v)
{
    const __m512 half = _mm512_set1_ps(0.5f);
    const __m512i sign = _mm512_set1_epi32((int)0x80000000u);
    __m512 h = _mm512_castsi512_ps(_mm512_or_si512(_mm512_and_si512(_mm512_castps_si512(v), sign), _mm512_castps_si512(half)));
    __m512i q = _mm512_cvttps_epi32(_mm512_add_ps(v, h));
    q = _mm512_max_epi32(q, _mm512_set1_epi32(-127));
    q = _mm512_min_epi32(q, _mm512_set1_epi32(127));
    return _mm512_cvtepi32_epi8(q);
}

AVX512 static void quantize_avx512(const float *src, int8_t *dst, int64_t n, float scale)
{
    const __m512 s = _mm512_set1_ps(scale);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm_storeu_si128((__m128i *)(dst + i), float2int8_16(_mm512_mul_ps(_mm512_loadu_ps(src + i), s)));
    if (i < n) {
        __mmask16 m = (__mmask16)((1u << (n - i)) - 1);
        _mm_mask_storeu_epi8(dst + i, m, float2int8_16(_mm512_mul_ps(_mm512_maskz_loadu_ps(m, src + i), s)));
    }
}

/* (float)((double)f * si + b) in 16 lanes: the product is exact in double, the sum and the cast
   round, as the scalar (float)(p + (double)b) */
AVX512 static inline __m512 dq16(__m512 f, __m512 si, const __m512 *b)
{
    __m512d lo = _mm512_mul_pd(_mm512_cvtps_pd(_mm512_castps512_ps256(f)), _mm512_cvtps_pd(_mm512_castps512_ps256(si)));
    __m512d hi = _mm512_mul_pd(_mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(f), 1))),
                               _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(si), 1))));
    if (b) {
        lo = _mm512_add_pd(lo, _mm512_cvtps_pd(_mm512_castps512_ps256(*b)));
        hi = _mm512_add_pd(hi, _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(*b), 1))));
    }
    return _mm512_insertf32x8(_mm512_castps256_ps512(_mm512_cvtpd_ps(lo)), _mm512_cvtpd_ps(hi), 1);
}

AVX512 static inline __m512 act16(__m512 v, int act, float a0, float a1)
{
    const __m512 zero = _mm512_setzero_ps();
    switch (act) {
    case 1: /* max(0, v) keeps a NaN, as numpy's maximum */
        return _mm512_max_ps(zero, v);
    case 2:
        return _mm512_mask_mul_ps(v, _mm512_cmp_ps_mask(v, zero, _CMP_LT_OQ), v, _mm512_set1_ps(a0));
    case 3:
        v = _mm512_max_ps(_mm512_set1_ps(a0), v);
        return _mm512_min_ps(_mm512_set1_ps(a1), v);
    default:
        return v;
    }
}

/* 16 channels from j: (float)((double)(float)acc * scale_in + bias), activated */
AVX512 static inline __m512 dequantize_16(const ncnnc_dequantize_ctx *c, const int32_t *acc, int64_t j, __mmask16 m)
{
    __m512 f = _mm512_cvtepi32_ps(_mm512_maskz_loadu_epi32(m, acc + j));
    __m512 si = _mm512_maskz_loadu_ps(m, c->scale_in + j);
    __m512 b = c->bias ? _mm512_maskz_loadu_ps(m, c->bias + j) : _mm512_setzero_ps();
    return act16(dq16(f, si, c->bias ? &b : 0), c->act, c->a0, c->a1);
}

AVX512 static void dequantize_avx512(const ncnnc_dequantize_ctx *c, const int32_t *acc, float *out, int8_t *out8)
{
    const int64_t ch = c->channels;
    const __m512 ts = _mm512_set1_ps(c->top_scale);
    for (int64_t j = 0; j < ch; j += 16) {
        __mmask16 m = ch - j >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (ch - j)) - 1);
        __m512 v = dequantize_16(c, acc, j, m);
        if (out8)
            _mm_mask_storeu_epi8(out8 + j, m, float2int8_16(_mm512_mul_ps(v, ts)));
        else
            _mm512_mask_storeu_ps(out + j, m, v);
    }
}

static int has_avx512(void)
{
    static int known = -1;
    if (known < 0)
        known = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
    return known && !scalar_only;
}

/* 16 lanes of a coefficient: per element (vec) or one for the run */
AVX512 static inline __m512 coef16(const float *a, int64_t at, int vec, __mmask16 m)
{
    return vec ? _mm512_maskz_loadu_ps(m, a + at) : _mm512_set1_ps(a[at]);
}

AVX512 static void channels_run_avx512(const ncnnc_channels_ctx *c, const void *src, void *dst, int64_t n, int64_t ch, int vec)
{
    for (int64_t j = 0; j < n; j += 16) {
        const __mmask16 m = n - j >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - j)) - 1);
        const int64_t at = vec ? ch + j : ch;
        const __m512 s = coef16(c->scale, at, vec, m);
        if (c->op == 0) {
            __m512 x = _mm512_maskz_loadu_ps(m, (const float *)src + j);
            _mm_mask_storeu_epi8((int8_t *)dst + j, m, float2int8_16(_mm512_mul_ps(x, s)));
            continue;
        }
        __m512 f = _mm512_cvtepi32_ps(_mm512_maskz_loadu_epi32(m, (const int32_t *)src + j));
        __m512 b = c->bias ? coef16(c->bias, at, vec, m) : _mm512_setzero_ps();
        __m512 v = act16(dq16(f, s, c->bias ? &b : 0), c->act, c->a0, c->a1);
        if (c->op == 1)
            _mm512_mask_storeu_ps((float *)dst + j, m, v);
        else
            _mm_mask_storeu_epi8((int8_t *)dst + j, m, float2int8_16(_mm512_mul_ps(v, coef16(c->scale_out, at, vec, m))));
    }
}
#else
#define HAVE_AVX512 0
#endif

static void quantize_range(const float *src, int8_t *dst, int64_t n, float s)
{
#if HAVE_AVX512
    if (has_avx512()) {
        quantize_avx512(src, dst, n, s);
        return;
    }
#endif
    for (int64_t i = 0; i < n; i++)
        dst[i] = float2int8(src[i] * s);
}

int ncnnc_int8_quantize(const void *ctx, void *const *ptrs)
{
    const ncnnc_quantize_ctx *c = (const ncnnc_quantize_ctx *)ctx;
    const float *src = (const float *)ptrs[0];
    int8_t *dst = (int8_t *)ptrs[1];
    const int64_t n = c->n;
    const int64_t chunks = (n + CHUNK - 1) / CHUNK;
#pragma omp parallel for schedule(static) if (chunks > 1)
    for (int64_t k = 0; k < chunks; k++) {
        const int64_t end = (k + 1) * CHUNK < n ? (k + 1) * CHUNK : n;
        quantize_range(src + k * CHUNK, dst + k * CHUNK, end - k * CHUNK, c->scale);
    }
    return 0;
}

static inline float activate(float v, int act, float a0, float a1)
{
    switch (act) {
    case 1:
        return v < 0.f ? 0.f : v;
    case 2:
        return v < 0.f ? v * a0 : v;
    case 3:
        v = v < a0 ? a0 : v;
        return v > a1 ? a1 : v;
    default:
        return v;
    }
}

static void dequantize_row(const ncnnc_dequantize_ctx *c, const int32_t *acc, float *out, int8_t *out8)
{
#if HAVE_AVX512
    if (has_avx512()) {
        dequantize_avx512(c, acc, out, out8);
        return;
    }
#endif
    const int64_t ch = c->channels;
    const float *si = c->scale_in, *b = c->bias;
    const float ts = c->top_scale;
    for (int64_t j = 0; j < ch; j++) {
        double p = (double)(float)acc[j] * (double)si[j];
        float v = b ? (float)(p + (double)b[j]) : (float)p;
        v = activate(v, c->act, c->a0, c->a1);
        if (out8)
            out8[j] = float2int8(v * ts);
        else
            out[j] = v;
    }
}

int ncnnc_int8_dequantize(const void *ctx, void *const *ptrs)
{
    const ncnnc_dequantize_ctx *c = (const ncnnc_dequantize_ctx *)ctx;
    const int32_t *src = (const int32_t *)ptrs[0];
    const int64_t ch = c->channels, pixels = c->pixels;
    float *dst = c->top_scale > 0.f ? 0 : (float *)ptrs[1];
    int8_t *dst8 = c->top_scale > 0.f ? (int8_t *)ptrs[1] : 0;
#pragma omp parallel for schedule(static) if (pixels * ch > CHUNK)
    for (int64_t p = 0; p < pixels; p++)
        dequantize_row(c, src + p * ch, dst ? dst + p * ch : 0, dst8 ? dst8 + p * ch : 0);
    return 0;
}

/* n elements of one run: channel ch + j of element j (vec), or channel ch for all of them */
static void channels_run(const ncnnc_channels_ctx *c, const void *src, void *dst, int64_t n, int64_t ch, int vec)
{
#if HAVE_AVX512
    if (has_avx512()) {
        channels_run_avx512(c, src, dst, n, ch, vec);
        return;
    }
#endif
    for (int64_t j = 0; j < n; j++) {
        const int64_t k = vec ? ch + j : ch;
        if (c->op == 0) {
            ((int8_t *)dst)[j] = float2int8(((const float *)src)[j] * c->scale[k]);
            continue;
        }
        double p = (double)(float)((const int32_t *)src)[j] * (double)c->scale[k];
        float v = c->bias ? (float)(p + (double)c->bias[k]) : (float)p;
        v = activate(v, c->act, c->a0, c->a1);
        if (c->op == 1)
            ((float *)dst)[j] = v;
        else
            ((int8_t *)dst)[j] = float2int8(v * c->scale_out[k]);
    }
}

int ncnnc_int8_channels(const void *ctx, void *const *ptrs)
{
    const ncnnc_channels_ctx *c = (const ncnnc_channels_ctx *)ctx;
    const char *src = (const char *)ptrs[0];
    char *dst = (char *)ptrs[1];
    const size_t in_size = 4, out_size = c->op == 1 ? 4 : 1; /* f32 / s32 in */
    const int64_t block = c->block, row = c->inner * block, rows = c->outer * c->groups;
    /* a row (one (o, g)) in pieces of whole blocks, about CHUNK elements each */
    const int64_t piece = CHUNK / block > 0 ? CHUNK / block * block : block;
    const int64_t pieces = (row + piece - 1) / piece;
#pragma omp parallel for schedule(static) if (rows * row > CHUNK)
    for (int64_t u = 0; u < rows * pieces; u++) {
        const int64_t r = u / pieces, start = u % pieces * piece;
        const int64_t len = row - start < piece ? row - start : piece;
        const int64_t g = r % c->groups, at = r * row + start;
        if (block == 1) {
            channels_run(c, src + at * in_size, dst + at * out_size, len, g, 0);
            continue;
        }
        for (int64_t i = 0; i < len; i += block)
            channels_run(c, src + (at + i) * in_size, dst + (at + i) * out_size, block, g * block, 1);
    }
    return 0;
}
