/* ReLU, max pooling and Softmax as steps of the native CPU plan (ncnn_c/net/native/ops/),
   where oneDNN's kernels treat NaN and inf otherwise than ncnn and the numpy layers
   (docs/design.md, "NaN and inf"):

   * relu: y = x < 0 ? 0 : x, ncnn's max_ps(0, x): a NaN stays NaN, -inf goes to 0. oneDNN's
     relu is max(x, 0), which gives 0 for a NaN.
   * maxpool: max pooling in any of the layouts oneDNN gives activations, memory seen as
     [groups][h][w][block] (plain: groups = channels, block 1; blocked aBcd16b: block 16;
     channels-last: one group of every channel), the border -FLT_MAX as ncnn pads; a NaN
     anywhere in a window gives NaN (ncnn_c/layer/pooling.py). oneDNN's kernel folds from
     -FLT_MAX taking v only where acc < v: it skips a NaN, and an all -inf window gives
     -FLT_MAX.
   * softmax_fix: after oneDNN's softmax, each line whose input holds a NaN or +inf, or only
     -inf, computed again by ncnn's rule (ncnn_c/layer/softmax.py: the max from -FLT_MAX
     skipping NaN, exp(min(x - max, 88.376..)) with a NaN argument taking the bound), where
     oneDNN gives NaN. Lines of finite values (-inf among them) keep oneDNN's result, so the
     step costs one read of the input. Memory seen as [outer][groups][inner][block]: element
     j of line (o, i) at ((o * groups + j / block) * inner + i) * block + j % block.

   A step is called by plan.c with its context and its memories' data pointers, on the
   thread count plan.c set for the run; a loop splits over threads only when it is large
   enough to pay for waking them. The pooling has AVX-512 and AVX2 bodies (intrinsics, picked
   at run time) and a portable one. */
#include <float.h>
#include <math.h>
#include <stdint.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define NCNNC_X86 1
#endif

const char ncnnc_nonfinite_build_stamp[] = "NCNNC_STAMP:@STAMP@";

typedef struct {
    int64_t n;
} ncnnc_relu_ctx;

typedef struct {
    int64_t groups, block;            /* memory [groups][h][w][block], output [groups][oh][ow][block] */
    int64_t h, w, oh, ow;
    int kh, kw, sh, sw, pad_t, pad_l; /* pad_t / pad_l >= 0; bottom / right as the sizes say */
} ncnnc_maxpool_ctx;

typedef struct {
    int64_t outer, groups, inner, block; /* the layout: see the top of the file */
    int64_t n;                           /* the line's length (groups * block less padding) */
} ncnnc_softmax_ctx;

/* below this many values one thread is done before another one wakes */
#define PARALLEL_MIN 65536

/* ncnn's exp_ps bound (sse/avx/avx512_mathfun.h) */
#define EXP_HI 88.3762626647949f

/* x < 0 ? 0 : x is x86's maxps(0, x): gcc makes the loop one instruction a vector */
#ifdef NCNNC_X86
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
static void relu_run(const float *src, float *dst, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        dst[i] = src[i] < 0.f ? 0.f : src[i];
}

#define RELU_CHUNK 16384

int ncnnc_relu(const void *vctx, void *const *ptrs)
{
    const int64_t n = ((const ncnnc_relu_ctx *)vctx)->n, chunks = (n + RELU_CHUNK - 1) / RELU_CHUNK;
    const float *src = (const float *)ptrs[0];
    float *dst = (float *)ptrs[1];
#pragma omp parallel for schedule(static) if (n >= 4 * PARALLEL_MIN)
    for (int64_t k = 0; k < chunks; k++) {
        const int64_t i = k * RELU_CHUNK;
        relu_run(src + i, dst + i, n - i < RELU_CHUNK ? n - i : RELU_CHUNK);
    }
    return 0;
}

/* a max keeping a NaN of either operand: the max takes v's, the select the accumulator's */
static inline float nan_max(float acc, float v)
{
    const float m = acc > v ? acc : v;
    return acc != acc ? acc : m;
}

/* one output pixel's window: rows [ya, yb), columns [xa, xb) of its group, and the value it
   starts from (-FLT_MAX where the window reaches into the border, else -inf) */
typedef struct {
    int64_t ya, yb, xa, xb;
    float start;
} window;

static inline window window_of(const ncnnc_maxpool_ctx *c, int64_t oy, int64_t ox)
{
    const int64_t y0 = oy * c->sh - c->pad_t, x0 = ox * c->sw - c->pad_l;
    window win;
    win.ya = y0 < 0 ? 0 : y0;
    win.yb = y0 + c->kh < c->h ? y0 + c->kh : c->h;
    win.xa = x0 < 0 ? 0 : x0;
    win.xb = x0 + c->kw < c->w ? x0 + c->kw : c->w;
    const int cut = win.ya != y0 || win.yb != y0 + c->kh || win.xa != x0 || win.xb != x0 + c->kw;
    win.start = cut ? -FLT_MAX : -INFINITY;
    return win;
}

/* lanes [k, block) of one pixel, one by one */
static inline void pool_lanes(const float *sg, float *out, int64_t w, int64_t block, window win, int64_t k)
{
    for (; k < block; k++) {
        float acc = win.start;
        for (int64_t y = win.ya; y < win.yb; y++)
            for (int64_t x = win.xa; x < win.xb; x++)
                acc = nan_max(acc, sg[(y * w + x) * block + k]);
        out[k] = acc;
    }
}

#ifdef NCNNC_X86
/* the lanes in registers across the taps: max_ps, and a mask of the NaN taps put back at the
   end (max_ps(acc, v) takes a NaN v, but the next tap's max_ps drops it again) */
__attribute__((target("avx512f"))) static void pool_row_avx512(const ncnnc_maxpool_ctx *c, const float *sg,
                                                                float *out, int64_t oy)
{
    const int64_t block = c->block, w = c->w;
    for (int64_t ox = 0; ox < c->ow; ox++, out += block) {
        const window win = window_of(c, oy, ox);
        int64_t k = 0;
        for (; k + 32 <= block; k += 32) { /* two chains: a max waits for the one before */
            __m512 a0 = _mm512_set1_ps(win.start), a1 = a0;
            __mmask16 n0 = 0, n1 = 0;
            for (int64_t y = win.ya; y < win.yb; y++)
                for (int64_t x = win.xa; x < win.xb; x++) {
                    const float *p = sg + (y * w + x) * block + k;
                    const __m512 v0 = _mm512_loadu_ps(p), v1 = _mm512_loadu_ps(p + 16);
                    a0 = _mm512_max_ps(a0, v0);
                    a1 = _mm512_max_ps(a1, v1);
                    n0 |= _mm512_cmp_ps_mask(v0, v0, _CMP_UNORD_Q);
                    n1 |= _mm512_cmp_ps_mask(v1, v1, _CMP_UNORD_Q);
                }
            _mm512_storeu_ps(out + k, _mm512_mask_mov_ps(a0, n0, _mm512_set1_ps(NAN)));
            _mm512_storeu_ps(out + k + 16, _mm512_mask_mov_ps(a1, n1, _mm512_set1_ps(NAN)));
        }
        for (; k + 16 <= block; k += 16) {
            __m512 acc = _mm512_set1_ps(win.start);
            __mmask16 nan = 0;
            for (int64_t y = win.ya; y < win.yb; y++)
                for (int64_t x = win.xa; x < win.xb; x++) {
                    const __m512 v = _mm512_loadu_ps(sg + (y * w + x) * block + k);
                    acc = _mm512_max_ps(acc, v);
                    nan |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
                }
            _mm512_storeu_ps(out + k, _mm512_mask_mov_ps(acc, nan, _mm512_set1_ps(NAN)));
        }
        pool_lanes(sg, out, w, block, win, k);
    }
}

__attribute__((target("avx2"))) static void pool_row_avx2(const ncnnc_maxpool_ctx *c, const float *sg,
                                                           float *out, int64_t oy)
{
    const int64_t block = c->block, w = c->w;
    for (int64_t ox = 0; ox < c->ow; ox++, out += block) {
        const window win = window_of(c, oy, ox);
        int64_t k = 0;
        for (; k + 8 <= block; k += 8) {
            __m256 acc = _mm256_set1_ps(win.start), nan = _mm256_setzero_ps();
            for (int64_t y = win.ya; y < win.yb; y++)
                for (int64_t x = win.xa; x < win.xb; x++) {
                    const __m256 v = _mm256_loadu_ps(sg + (y * w + x) * block + k);
                    acc = _mm256_max_ps(acc, v);
                    nan = _mm256_or_ps(nan, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
                }
            _mm256_storeu_ps(out + k, _mm256_blendv_ps(acc, _mm256_set1_ps(NAN), nan));
        }
        pool_lanes(sg, out, w, block, win, k);
    }
}

static int isa(void)
{
    static int cached = -1;
    if (cached < 0) {
        __builtin_cpu_init();
        cached = __builtin_cpu_supports("avx512f") ? 2 : __builtin_cpu_supports("avx2") ? 1 : 0;
    }
    return cached;
}
#endif

static void pool_row(const ncnnc_maxpool_ctx *c, const float *src, float *dst, int64_t g, int64_t oy)
{
    const float *sg = src + g * c->h * c->w * c->block;
    float *out = dst + (g * c->oh + oy) * c->ow * c->block;
#ifdef NCNNC_X86
    const int level = isa();
    if (level == 2 && c->block >= 16)
        return pool_row_avx512(c, sg, out, oy);
    if (level >= 1 && c->block >= 8)
        return pool_row_avx2(c, sg, out, oy);
#endif
    for (int64_t ox = 0; ox < c->ow; ox++)
        pool_lanes(sg, out + ox * c->block, c->w, c->block, window_of(c, oy, ox), 0);
}

int ncnnc_maxpool(const void *vctx, void *const *ptrs)
{
    const ncnnc_maxpool_ctx *c = (const ncnnc_maxpool_ctx *)vctx;
    const float *src = (const float *)ptrs[0];
    float *dst = (float *)ptrs[1];
    const int64_t rows = c->groups * c->oh;
    const int64_t work = rows * c->ow * c->block * c->kh * c->kw;
#pragma omp parallel for schedule(static) if (work >= PARALLEL_MIN && rows > 1)
    for (int64_t r = 0; r < rows; r++)
        pool_row(c, src, dst, r / c->oh, r % c->oh);
    return 0;
}

static inline int64_t at(const ncnnc_softmax_ctx *c, int64_t o, int64_t i, int64_t j)
{
    return ((o * c->groups + j / c->block) * c->inner + i) * c->block + j % c->block;
}

int ncnnc_softmax_fix(const void *vctx, void *const *ptrs)
{
    const ncnnc_softmax_ctx *c = (const ncnnc_softmax_ctx *)vctx;
    const float *src = (const float *)ptrs[0];
    float *dst = (float *)ptrs[1];
    const int64_t lines = c->outer * c->inner, n = c->n;
#pragma omp parallel for schedule(static) if (lines * n >= PARALLEL_MIN && lines > 1)
    for (int64_t l = 0; l < lines; l++) {
        const int64_t o = l / c->inner, i = l % c->inner;
        int64_t hot = 0, ninf = 0;
        for (int64_t j = 0; j < n; j++) {
            const float v = src[at(c, o, i, j)];
            hot += v != v || v == INFINITY;
            ninf += v == -INFINITY;
        }
        if (!hot && ninf < n)
            continue;
        float m = -FLT_MAX;
        for (int64_t j = 0; j < n; j++) {
            const float v = src[at(c, o, i, j)];
            m = v > m ? v : m;
        }
        float sum = 0.f;
        for (int64_t j = 0; j < n; j++) {
            const float a = src[at(c, o, i, j)] - m;
            const float e = expf(a < EXP_HI ? a : EXP_HI); /* a NaN takes the bound */
            dst[at(c, o, i, j)] = e;
            sum += e;
        }
        for (int64_t j = 0; j < n; j++)
            dst[at(c, o, i, j)] /= sum;
    }
    return 0;
}
