
#include <stddef.h>
#include <string.h>

const char ncnnc_cpu_build_stamp[] = "NCNNC_STAMP:@STAMP@";

/* Each kernel body is inlined twice: into an AVX2+FMA entry used when the CPU has both
   (checked at run time) and into a baseline x86-64 one, so no -march flag is needed. */
#if defined(__x86_64__) && defined(__GNUC__)
#define NCNNC_X86 1
#define BODY static inline __attribute__((always_inline))
#define AVX2 __attribute__((target("avx2,fma")))
static int have_avx2(void)
{
    static int cached = -1;
    if (cached < 0)
    {
        __builtin_cpu_init();
        cached = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    }
    return cached;
}
#else
#define BODY static inline
#endif

/* The x86 features ncnn's cpu.h reports, as the CPU and the OS answer them (CPUID, and XGETBV
   for the AVX register state, through GCC's checks): bit 0 avx, 1 fma, 2 f16c, 3 avx2, 4 the
   avx512 f+bw+cd+dq+vl set, 5 avx512_vnni, 6 avx512_bf16, 7 avx512_fp16. -1 off x86. What
   /proc/cpuinfo lists can differ from what the process may execute (an emulator, a masked VM). */
#ifdef NCNNC_X86
#include <cpuid.h>
int ncnnc_x86_features(void)
{
    __builtin_cpu_init();
    unsigned a = 0, b = 0, c = 0, d = 0;
    int f16c = __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 29)) && __builtin_cpu_supports("avx");
    int avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw")
                 && __builtin_cpu_supports("avx512cd") && __builtin_cpu_supports("avx512dq")
                 && __builtin_cpu_supports("avx512vl");
    return (__builtin_cpu_supports("avx") ? 1 : 0) | (__builtin_cpu_supports("fma") ? 2 : 0) | (f16c ? 4 : 0)
           | (__builtin_cpu_supports("avx2") ? 8 : 0) | (avx512 ? 16 : 0)
           | (__builtin_cpu_supports("avx512vnni") ? 32 : 0) | (__builtin_cpu_supports("avx512bf16") ? 64 : 0)
           | (__builtin_cpu_supports("avx512fp16") ? 128 : 0);
}
#else
int ncnnc_x86_features(void) { return -1; }
#endif

/* The Arm features ncnn's cpu.h reports, from the kernel's hardware capability words (what
   the process may execute; an emulator such as qemu-user answers for the CPU it emulates,
   while /proc/cpuinfo there is the host's): bit 0 neon (aarch64's asimd), 1 vfpv4, 2 asimdhp,
   3 fphp, 4 asimddp. As in ncnn, aarch64 always has neon and vfpv4. -1 off Arm Linux. */
#if defined(__linux__) && (defined(__aarch64__) || defined(__arm__))
#include <sys/auxv.h>
int ncnnc_arm_features(void)
{
    const unsigned long hw = getauxval(AT_HWCAP);
#if defined(__aarch64__)
    /* arch/arm64/include/uapi/asm/hwcap.h: FPHP 9, ASIMDHP 10, ASIMDDP 20 */
    return 1 | 2 | (hw >> 10 & 1 ? 4 : 0) | (hw >> 9 & 1 ? 8 : 0) | (hw >> 20 & 1 ? 16 : 0);
#else
    /* arch/arm/include/uapi/asm/hwcap.h: NEON 12, VFPv4 16 */
    return (hw >> 12 & 1 ? 1 : 0) | (hw >> 16 & 1 ? 2 : 0);
#endif
}
#else
int ncnnc_arm_features(void) { return -1; }
#endif

#ifdef NCNNC_X86
#define DISPATCH(name, params, args) \
    AVX2 static void name##_avx2 params { name##_body args; } \
    static void name##_base params { name##_body args; } \
    void ncnnc_##name params { if (have_avx2()) name##_avx2 args; else name##_base args; }
#else
#define DISPATCH(name, params, args) \
    void ncnnc_##name params { name##_body args; }
#endif

/* the fused activation of an output value: ReLU (relu), leaky ReLU (slope), or none (relu 0,
   slope 1: v * 1 is v exactly) */
static inline float finish(float v, int relu, float slope)
{
    return v < 0.f ? (relu ? 0.f : v * slope) : v;
}

/* one channel bordered: y (oh x ow) = value around x (h x w) placed at (top, left) */
BODY void pad_channel(const float* restrict xc, int h, int w, float* restrict yc, int top, int left, int oh,
                      int ow, float value)
{
    for (int i = 0; i < oh; i++)
    {
        float* restrict row = yc + (size_t)i * ow;
        if (i < top || i >= top + h)
        {
            for (int j = 0; j < ow; j++)
                row[j] = value;
            continue;
        }
        const float* restrict src = xc + (size_t)(i - top) * w;
        for (int j = 0; j < left; j++)
            row[j] = value;
        for (int j = 0; j < w; j++)
            row[left + j] = src[j];
        for (int j = left + w; j < ow; j++)
            row[j] = value;
    }
}

/* channels [c0, c1): y[c] = bias[c] + sum over taps of weight[c][tap] * x[c] shifted, then an
   optional ReLU; x rows are w floats apart and channels xcstep apart, y rows outw apart and
   channels ycstep apart.
   When both strides are equal, output (oy, ox) reads x at s * (oy * w + ox) + tap offset: one
   run over j = oy * w + ox covers a whole channel in a single vectorised loop (rows of 7 or
   14 would otherwise spend their time in loop tails), into buf (outh * w floats), and only the
   ox < outw columns are kept. Stride 2 wastes half of that run, so wide stride-2 rows go row
   by row instead. */
BODY void depthwise_body(const float* x, long xcstep, int h, int w, int top, int left, float value, int ph,
                         int pw, float* y, long ycstep, int outh, int outw,
                         const float* weight, const float* bias, int relu, float slope, int c0, int c1,
                         int kw, int kh, int sw, int sh, int dw, int dh, float* buf)
{
    const int maxk = kw * kh;
    const int k33 = kw == 3 && kh == 3 && dw == 1 && dh == 1;
    const int flat = sw == sh && (sw == 1 || outw < 16);
    const int n = (outh - 1) * pw + outw;
    const int bordered = top != 0 || left != 0 || ph != h || pw != w;
    float* pbuf = buf;                                    /* ph * pw: one bordered channel */
    float* abuf = buf + (bordered ? (size_t)ph * pw : 0); /* outh * pw: the flat run */
    for (int c = c0; c < c1; c++)
    {
        const float* restrict xc = x + (size_t)c * xcstep;
        if (bordered)
        {
            pad_channel(xc, h, w, pbuf, top, left, ph, pw, value);
            xc = pbuf;
        }
        const float* k = weight + (size_t)c * maxk;
        float* yc = y + (size_t)c * ycstep;
        const float b = bias ? bias[c] : 0.f;
        if (flat)
        {
            float* restrict acc = abuf;
            if (k33 && sw == 1)
            {
                const float* restrict r0 = xc;
                const float* restrict r1 = xc + pw;
                const float* restrict r2 = xc + 2 * pw;
                for (int j = 0; j < n; j++)
                    acc[j] = b + k[0] * r0[j] + k[1] * r0[j + 1] + k[2] * r0[j + 2]
                             + k[3] * r1[j] + k[4] * r1[j + 1] + k[5] * r1[j + 2]
                             + k[6] * r2[j] + k[7] * r2[j + 1] + k[8] * r2[j + 2];
            }
            else if (k33 && sw == 2)
            {
                const float* restrict r0 = xc;
                const float* restrict r1 = xc + pw;
                const float* restrict r2 = xc + 2 * pw;
                for (int j = 0; j < n; j++)
                {
                    const int i = 2 * j;
                    acc[j] = b + k[0] * r0[i] + k[1] * r0[i + 1] + k[2] * r0[i + 2]
                             + k[3] * r1[i] + k[4] * r1[i + 1] + k[5] * r1[i + 2]
                             + k[6] * r2[i] + k[7] * r2[i + 1] + k[8] * r2[i + 2];
                }
            }
            else
            {
                for (int j = 0; j < n; j++)
                    acc[j] = b;
                for (int ky = 0; ky < kh; ky++)
                {
                    for (int kx = 0; kx < kw; kx++)
                    {
                        const float wv = k[ky * kw + kx];
                        const float* restrict s = xc + (size_t)(ky * dh) * pw + kx * dw;
                        for (int j = 0; j < n; j++)
                            acc[j] += wv * s[(size_t)sw * j];
                    }
                }
            }
            for (int oy = 0; oy < outh; oy++)
            {
                const float* restrict a = acc + (size_t)oy * pw;
                float* restrict out = yc + (size_t)oy * outw;
                for (int ox = 0; ox < outw; ox++)
                    out[ox] = finish(a[ox], relu, slope);
            }
            continue;
        }
        for (int oy = 0; oy < outh; oy++)
        {
            float* restrict out = yc + (size_t)oy * outw;
            const float* restrict r0 = xc + (size_t)(oy * sh) * pw;
            if (k33 && sw == 2)
            {
                const float* restrict r1 = r0 + pw;
                const float* restrict r2 = r1 + pw;
                for (int ox = 0; ox < outw; ox++)
                {
                    const int i = 2 * ox;
                    float s = b + k[0] * r0[i] + k[1] * r0[i + 1] + k[2] * r0[i + 2]
                              + k[3] * r1[i] + k[4] * r1[i + 1] + k[5] * r1[i + 2]
                              + k[6] * r2[i] + k[7] * r2[i + 1] + k[8] * r2[i + 2];
                    out[ox] = finish(s, relu, slope);
                }
                continue;
            }
            for (int ox = 0; ox < outw; ox++)
                out[ox] = b;
            for (int ky = 0; ky < kh; ky++)
            {
                const float* row = r0 + (size_t)(ky * dh) * pw;
                for (int kx = 0; kx < kw; kx++)
                {
                    const float wv = k[ky * kw + kx];
                    const float* restrict s = row + kx * dw;
                    for (int ox = 0; ox < outw; ox++)
                        out[ox] += wv * s[(size_t)ox * sw];
                }
            }
            if (relu || slope != 1.f)
                for (int ox = 0; ox < outw; ox++)
                    out[ox] = finish(out[ox], relu, slope);
        }
    }
}

/* Greedy NMS over boxes already in score order, ncnn's test in float32: box i is kept when
   no kept box overlaps it by more than thr (inter / union > thr, or inter > thr * union with
   product). Writes the kept indices to picked, stops after limit of them; returns the count.
   In Python this is one numpy pass per kept box: thousands of passes for the equal scores a
   zero-weight YOLO head produces. Not dispatched: plain scalar code. */
int ncnnc_nms(const float* x1, const float* y1, const float* x2, const float* y2, const float* areas, int n,
              float thr, int product, int limit, long* picked)
{
    int count = 0;
    for (int i = 0; i < n && count < limit; i++)
    {
        int keep = 1;
        for (int q = 0; q < count; q++)
        {
            const long k = picked[q];
            float inter = 0.f;
            if (!(x1[i] > x2[k] || x2[i] < x1[k] || y1[i] > y2[k] || y2[i] < y1[k]))
            {
                const float iw = (x2[i] < x2[k] ? x2[i] : x2[k]) - (x1[i] > x1[k] ? x1[i] : x1[k]);
                const float ih = (y2[i] < y2[k] ? y2[i] : y2[k]) - (y1[i] > y1[k] ? y1[i] : y1[k]);
                inter = iw * ih;
            }
            const float sum = areas[i] + areas[k];
            const float uni = sum - inter;
            int hit;
            if (product)
            {
                const float t = thr * uni;
                hit = inter > t;
            }
            else
            {
                const float r = inter / uni;
                hit = r > thr;
            }
            if (hit)
            {
                keep = 0;
                break;
            }
        }
        if (keep)
            picked[count++] = i;
    }
    return count;
}

/* ncnn's descending quicksort (Hoare partition around the middle element), replayed on the
   scores and their indices so that tied scores come out in ncnn's order */
void ncnnc_qsort_desc(float* scores, long* idx, int left, int right)
{
    while (left < right)
    {
        int i = left, j = right;
        const float p = scores[(left + right) / 2];
        while (i <= j)
        {
            while (scores[i] > p)
                i++;
            while (scores[j] < p)
                j--;
            if (i <= j)
            {
                float ts = scores[i];
                scores[i] = scores[j];
                scores[j] = ts;
                long ti = idx[i];
                idx[i] = idx[j];
                idx[j] = ti;
                i++;
                j--;
            }
        }
        if (left < j)
            ncnnc_qsort_desc(scores, idx, left, j);
        left = i;
    }
}

/* max that keeps a NaN of either operand (numpy's maximum, ncnn_c's rule for max pooling:
   a NaN anywhere in the window gives NaN; ncnn's own result there depends on its kernel's tap
   order, docs/design.md) */
static inline float nan_max(float acc, float v)
{
    /* the max takes v's NaN, the select keeps one the accumulator holds: 15 % slower than a
       plain max on AVX2 (three instructions a tap), the cheapest form measured */
    const float m = acc > v ? acc : v;
    return acc != acc ? acc : m;
}

/* eight lanes of nan_max, written out: gcc does not vectorise a reduction through the select */
typedef float v8f __attribute__((vector_size(32)));
typedef int v8i __attribute__((vector_size(32)));

static inline v8f nan_max8(v8f acc, v8f v)
{
    const v8i gt = acc > v, nan = acc != acc;
    const v8i m = ((v8i)acc & gt) | ((v8i)v & ~gt);
    return (v8f)(((v8i)acc & nan) | (m & ~nan));
}

/* y[c] = max (is_max) or sum of the n values of channel c, the sum in ncnn's sequential order
   (so it is ncnn's to the bit); eight channels at a time so that eight independent chains fill
   the pipeline instead of one add waiting for the previous (numpy's reduction along rows of
   49 values runs about ten times slower than ncnn's) */
BODY void global_pool_body(const float* x, long xcstep, int n, float* y, int is_max, int c0, int c1)
{
    int c = c0;
    if (is_max)
    {
        /* a max is the same in any order: eight lanes along the channel, then across them */
        for (; c < c1; c++)
        {
            const float* p = x + (size_t)c * xcstep;
            v8f acc = {p[0], p[0], p[0], p[0], p[0], p[0], p[0], p[0]}, acc1 = acc;
            int i = 0;
            for (; i + 16 <= n; i += 16) /* two chains: each select waits for the one before */
            {
                v8f v, v1;
                memcpy(&v, p + i, sizeof v);
                memcpy(&v1, p + i + 8, sizeof v1);
                acc = nan_max8(acc, v);
                acc1 = nan_max8(acc1, v1);
            }
            acc = nan_max8(acc, acc1);
            for (; i + 8 <= n; i += 8)
            {
                v8f v;
                memcpy(&v, p + i, sizeof v);
                acc = nan_max8(acc, v);
            }
            float r = acc[0];
            for (int k = 1; k < 8; k++)
                r = nan_max(r, acc[k]);
            for (; i < n; i++)
                r = nan_max(r, p[i]);
            y[c] = r;
        }
        return;
    }
    for (; c + 8 <= c1; c += 8)
    {
        const float* p = x + (size_t)c * xcstep;
        float acc[8];
        for (int k = 0; k < 8; k++)
            acc[k] = p[(size_t)k * xcstep];
        for (int i = 1; i < n; i++)
        {
            for (int k = 0; k < 8; k++)
            {
                const float v = p[(size_t)k * xcstep + i];
                acc[k] += v;
            }
        }
        for (int k = 0; k < 8; k++)
            y[c + k] = acc[k];
    }
    for (; c < c1; c++)
    {
        const float* p = x + (size_t)c * xcstep;
        float acc = p[0];
        for (int i = 1; i < n; i++)
            acc += p[i];
        y[c] = acc;
    }
}

/* channels [c0, c1): y = the max (is_max) or the sum of each kh x kw window (stride sh, sw) of
   x bordered by value, taps in row-major order as ncnn adds them. One pass over the output
   per tap row instead of numpy's one per tap, the border made per channel in buf. */
/* out[j] = max / sum over the kh x kw taps of r0 (rows pw apart) at j * sw, j < len; called
   with a literal sw of 1 or 2 so that the strided loads vectorise once inlined */
BODY void pool_run(float* restrict out, const float* r0, int pw, int len, int kw, int kh, int sw,
                   int is_max)
{
    for (int j = 0; j < len; j++)
        out[j] = r0[(size_t)j * sw];
    for (int ky = 0; ky < kh; ky++)
    {
        for (int kx = ky == 0 ? 1 : 0; kx < kw; kx++)
        {
            const float* restrict s = r0 + (size_t)ky * pw + kx;
            if (is_max)
            {
                for (int j = 0; j < len; j++)
                {
                    out[j] = nan_max(out[j], s[(size_t)j * sw]);
                }
            }
            else
            {
                for (int j = 0; j < len; j++)
                    out[j] += s[(size_t)j * sw];
            }
        }
    }
}

BODY void pool_body(const float* x, long xcstep, int h, int w, int top, int left, float value, int ph,
                    int pw, float* y, long ycstep, int outh, int outw, int is_max, int c0, int c1, int kw,
                    int kh, int sw, int sh, float* buf)
{
    const int bordered = top != 0 || left != 0 || ph != h || pw != w;
    /* short rows (7, 14) leave a vectorised row loop in its scalar tail: as in the depthwise
       kernel, equal strides let one flat run over j = oy * pw + ox cover the whole channel */
    const int flat = sw == sh && outw < 16;
    const int n = (outh - 1) * pw + outw;
    float* pbuf = buf;
    float* abuf = buf + (bordered ? (size_t)ph * pw : 0);
    for (int c = c0; c < c1; c++)
    {
        const float* restrict xc = x + (size_t)c * xcstep;
        if (bordered)
        {
            pad_channel(xc, h, w, pbuf, top, left, ph, pw, value);
            xc = pbuf;
        }
        float* yc = y + (size_t)c * ycstep;
        const int rows = flat ? 1 : outh;
        const int len = flat ? n : outw;
        for (int oy = 0; oy < rows; oy++)
        {
            float* restrict out = flat ? abuf : yc + (size_t)oy * outw;
            const float* r0 = xc + (size_t)(oy * sh) * pw;
            if (sw == 1)
                pool_run(out, r0, pw, len, kw, kh, 1, is_max);
            else if (sw == 2)
                pool_run(out, r0, pw, len, kw, kh, 2, is_max);
            else
                pool_run(out, r0, pw, len, kw, kh, sw, is_max);
        }
        if (flat)
            for (int oy = 0; oy < outh; oy++)
                for (int ox = 0; ox < outw; ox++)
                    yc[(size_t)oy * outw + ox] = abuf[(size_t)oy * pw + ox];
    }
}

/* constant border: y[c] (oh x ow) = value around x[c] (h x w) placed at (top, left) */
BODY void pad_body(const float* x, long xcstep, int h, int w, float* y, long ycstep, int top, int left,
                   int oh, int ow, float value, int c0, int c1)
{
    for (int c = c0; c < c1; c++)
        pad_channel(x + (size_t)c * xcstep, h, w, y + (size_t)c * ycstep, top, left, oh, ow, value);
}

/* r_k = row k of BT times the six rows d_0..d_5, element by element over n columns */
BODY void bt_rows(const float* restrict d0, const float* restrict d1, const float* restrict d2,
                  const float* restrict d3, const float* restrict d4, const float* restrict d5,
                  float* restrict r0, float* restrict r1, float* restrict r2, float* restrict r3,
                  float* restrict r4, float* restrict r5, int n)
{
    for (int j = 0; j < n; j++)
    {
        r0[j] = 4.f * d0[j] - 5.f * d2[j] + d4[j];
        r1[j] = -4.f * (d1[j] + d2[j]) + d3[j] + d4[j];
        r2[j] = 4.f * (d1[j] - d2[j]) - d3[j] + d4[j];
        r3[j] = 2.f * (d3[j] - d1[j]) - d2[j] + d4[j];
        r4[j] = 2.f * (d1[j] - d3[j]) - d2[j] + d4[j];
        r5[j] = 4.f * d1[j] - 5.f * d3[j] + d5[j];
    }
}

/* o_l[tx] = column l of B applied to the six values e[4 tx .. 4 tx + 5] */
BODY void b_cols(const float* restrict e, float* restrict o0, float* restrict o1, float* restrict o2,
                 float* restrict o3, float* restrict o4, float* restrict o5, int tw)
{
    for (int tx = 0; tx < tw; tx++)
    {
        const float e0 = e[4 * tx], e1 = e[4 * tx + 1], e2 = e[4 * tx + 2];
        const float e3 = e[4 * tx + 3], e4 = e[4 * tx + 4], e5 = e[4 * tx + 5];
        o0[tx] = 4.f * e0 - 5.f * e2 + e4;
        o1[tx] = -4.f * (e1 + e2) + e3 + e4;
        o2[tx] = 4.f * (e1 - e2) - e3 + e4;
        o3[tx] = 2.f * (e3 - e1) - e2 + e4;
        o4[tx] = 2.f * (e1 - e3) - e2 + e4;
        o5[tx] = 4.f * e1 - 5.f * e3 + e5;
    }
}

/* Winograd F(4x4, 3x3) input transform V = BT d B of every 6x6 tile (stride 4) of x, for
   channels [c0, c1). v is [c][36][th*tw], so a channel's tiles are written close together. Taps past the padded input's edge read pad_value: they only feed
   outputs past the edge, which the output transform drops. The input is bordered on the fly
   (top / left pads and pad_value), so no padded copy of the blob is made. Both passes run along whole rows
   so that they vectorise: first BT over the six input rows of a tile row, then B across. */
BODY void wino43_input_body(const float* x, long xcstep, int h, int w, int top, int left, float value,
                            float* v, int c, int th, int tw, int c0, int c1, float* buf)
{
    const size_t t = (size_t)th * tw;
    const size_t plane = t; /* v is [c][36][t]: one channel's 36 planes together */
    const int ew = tw * 4 + 2;
    float* r[6];
    float* rows[6];
    for (int k = 0; k < 6; k++)
    {
        r[k] = buf + (size_t)k * ew;
        rows[k] = buf + (size_t)(6 + k) * ew;
    }
    for (int q = c0; q < c1; q++)
    {
        const float* xc = x + (size_t)q * xcstep;
        for (int ty = 0; ty < th; ty++)
        {
            const float* d[6];
            for (int i = 0; i < 6; i++)
            {
                const int yy = ty * 4 + i - top;
                if (yy >= 0 && yy < h && left == 0 && w >= ew)
                {
                    d[i] = xc + (size_t)yy * w;
                    continue;
                }
                /* a bordered copy of the row: pad_value outside the input (also past the
                   padded extent, where only cropped outputs read it) */
                float* rb = rows[i];
                int j = 0;
                if (yy >= 0 && yy < h)
                {
                    const float* src = xc + (size_t)yy * w;
                    for (; j < left && j < ew; j++)
                        rb[j] = value;
                    for (; j < ew && j - left < w; j++)
                        rb[j] = src[j - left];
                }
                for (; j < ew; j++)
                    rb[j] = value;
                d[i] = rb;
            }
            bt_rows(d[0], d[1], d[2], d[3], d[4], d[5], r[0], r[1], r[2], r[3], r[4], r[5], ew);
            for (int k = 0; k < 6; k++)
            {
                float* o = v + (size_t)q * 36 * t + (size_t)(k * 6) * plane + (size_t)ty * tw;
                b_cols(r[k], o, o + plane, o + 2 * plane, o + 3 * plane, o + 4 * plane, o + 5 * plane, tw);
            }
        }
    }
}

/* Winograd F(4x4, 3x3) output transform Y = AT M A (+ bias, optional ReLU) for output
   channels [c0, c1); m is [outc][36][th*tw]; tiles are cropped to outh x outw. A across each
   tile row first (contiguous over tiles), then AT down the rows (contiguous over x). */
BODY void wino43_output_body(const float* m, int outc, int th, int tw, float* y, long ycstep, int outh,
                             int outw, const float* bias, int relu, float slope, int c0, int c1,
                             float* buf)
{
    const size_t t = (size_t)th * tw;
    const size_t plane = t; /* m is [outc][36][t] */
    const int ew = tw * 4;
    float* s[6];
    for (int k = 0; k < 6; k++)
        s[k] = buf + (size_t)k * ew;
    for (int p = c0; p < c1; p++)
    {
        const float b = bias ? bias[p] : 0.f;
        float* yc = y + (size_t)p * ycstep;
        for (int ty = 0; ty < th; ty++)
        {
            for (int a = 0; a < 6; a++)
            {
                const float* in = m + (size_t)p * 36 * t + (size_t)(a * 6) * plane + (size_t)ty * tw;
                const float *restrict m0 = in, *restrict m1 = in + plane, *restrict m2 = in + 2 * plane;
                const float *restrict m3 = in + 3 * plane, *restrict m4 = in + 4 * plane;
                const float* restrict m5 = in + 5 * plane;
                float* restrict o = s[a];
                for (int tx = 0; tx < tw; tx++)
                {
                    o[4 * tx] = m0[tx] + m1[tx] + m2[tx] + m3[tx] + m4[tx];
                    o[4 * tx + 1] = m1[tx] - m2[tx] + 2.f * (m3[tx] - m4[tx]);
                    o[4 * tx + 2] = m1[tx] + m2[tx] + 4.f * (m3[tx] + m4[tx]);
                    o[4 * tx + 3] = m1[tx] - m2[tx] + 8.f * (m3[tx] - m4[tx]) + m5[tx];
                }
            }
            const float *restrict s0 = s[0], *restrict s1 = s[1], *restrict s2 = s[2];
            const float *restrict s3 = s[3], *restrict s4 = s[4], *restrict s5 = s[5];
            const int rows = outh - ty * 4 < 4 ? outh - ty * 4 : 4;
            float* restrict y0 = yc + (size_t)(ty * 4) * outw;
            for (int x = 0; x < outw; x++)
                y0[x] = finish(s0[x] + s1[x] + s2[x] + s3[x] + s4[x] + b, relu, slope);
            if (rows > 1)
            {
                float* restrict y1 = y0 + outw;
                for (int x = 0; x < outw; x++)
                    y1[x] = finish(s1[x] - s2[x] + 2.f * (s3[x] - s4[x]) + b, relu, slope);
            }
            if (rows > 2)
            {
                float* restrict y2 = y0 + 2 * outw;
                for (int x = 0; x < outw; x++)
                    y2[x] = finish(s1[x] + s2[x] + 4.f * (s3[x] + s4[x]) + b, relu, slope);
            }
            if (rows > 3)
            {
                float* restrict y3 = y0 + 3 * outw;
                for (int x = 0; x < outw; x++)
                    y3[x] = finish(s1[x] - s2[x] + 8.f * (s3[x] - s4[x]) + s5[x] + b, relu, slope);
            }
        }
    }
}

/* y[c] += bias[c] (when bias), then the activation (finish), in one pass over channels [c0, c1)
   of n values each, channels ycstep apart: the epilogue of a matrix product */
BODY void bias_relu_body(float* y, long ycstep, long n, const float* bias, int relu, float slope, int c0,
                         int c1)
{
    for (int c = c0; c < c1; c++)
    {
        float* restrict yc = y + (size_t)c * ycstep;
        const float b = bias ? bias[c] : 0.f;
        for (long i = 0; i < n; i++)
            yc[i] = finish(yc[i] + b, relu, slope);
    }
}

DISPATCH(depthwise,
         (const float* x, long xcstep, int h, int w, int top, int left, float value, int ph, int pw,
          float* y, long ycstep, int outh, int outw, const float* weight, const float* bias, int relu,
          float slope, int c0, int c1, int kw, int kh, int sw, int sh, int dw, int dh, float* buf),
         (x, xcstep, h, w, top, left, value, ph, pw, y, ycstep, outh, outw, weight, bias, relu, slope, c0,
          c1, kw, kh, sw, sh, dw, dh, buf))
DISPATCH(pool,
         (const float* x, long xcstep, int h, int w, int top, int left, float value, int ph, int pw,
          float* y, long ycstep, int outh, int outw, int is_max, int c0, int c1, int kw, int kh, int sw,
          int sh, float* buf),
         (x, xcstep, h, w, top, left, value, ph, pw, y, ycstep, outh, outw, is_max, c0, c1, kw, kh, sw, sh,
          buf))
DISPATCH(global_pool,
         (const float* x, long xcstep, int n, float* y, int is_max, int c0, int c1),
         (x, xcstep, n, y, is_max, c0, c1))
DISPATCH(bias_relu,
         (float* y, long ycstep, long n, const float* bias, int relu, float slope, int c0, int c1),
         (y, ycstep, n, bias, relu, slope, c0, c1))
DISPATCH(pad,
         (const float* x, long xcstep, int h, int w, float* y, long ycstep, int top, int left,
          int oh, int ow, float value, int c0, int c1),
         (x, xcstep, h, w, y, ycstep, top, left, oh, ow, value, c0, c1))
DISPATCH(wino43_input,
         (const float* x, long xcstep, int h, int w, int top, int left, float value,
          float* v, int c, int th, int tw, int c0, int c1, float* buf),
         (x, xcstep, h, w, top, left, value, v, c, th, tw, c0, c1, buf))
DISPATCH(wino43_output,
         (const float* m, int outc, int th, int tw, float* y, long ycstep, int outh, int outw,
          const float* bias, int relu, float slope, int c0, int c1, float* buf),
         (m, outc, th, tw, y, ycstep, outh, outw, bias, relu, slope, c0, c1, buf))
