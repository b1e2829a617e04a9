/* The Winograd transforms of one channel-block width, included by winograd.c once per
   (LANES, instruction set). Before including: LANES (8 or 16: the channel block of the
   blocked layouts nChw8c / nChw16c, one vector), KSUF (a name suffix) and KATTR (a target
   attribute, or nothing). One vector holds one pixel's LANES channels, so every transform
   is plain vector arithmetic over whole channel blocks: no shuffles, and the same code for
   any block width.

   The matrices (Lavin & Gray's F(m,3) over the points 0, +-1, +-2, +-1/2, infinity) are
   written out below as sums and differences of the even and odd taps, which is why each
   pair of rows costs one add and one subtract more than the first. */

#define WK_CAT_(a, b) a##_##b
#define WK_CAT(a, b) WK_CAT_(a, b)
#define WK(name) WK_CAT(name, KSUF)

typedef float WK(vf) __attribute__((vector_size(LANES * 4), aligned(4)));
typedef int WK(vi) __attribute__((vector_size(LANES * 4), aligned(4)));
#define VF WK(vf)
#define VI WK(vi)

/* B^T d for one row of 8 (F(6,3)), 6 (F(4,3)) or 4 (F(2,3)) vectors */
static inline __attribute__((always_inline)) void WK(bt)(const VF *d, VF *o, const int n)
{
    if (n == 4) {
        o[0] = d[0] - d[2];
        o[1] = d[1] + d[2];
        o[2] = d[2] - d[1];
        o[3] = d[3] - d[1];
    } else if (n == 8) {
        o[0] = d[0] - d[6] + 5.25f * (d[4] - d[2]);
        o[7] = d[7] - d[1] + 5.25f * (d[3] - d[5]);
        VF e = d[2] + d[6] - 4.25f * d[4], q = d[1] + d[5] - 4.25f * d[3];
        o[1] = e + q;
        o[2] = e - q;
        e = 0.25f * d[2] - 1.25f * d[4] + d[6];
        q = 0.5f * d[1] - 2.5f * d[3] + 2.0f * d[5];
        o[3] = e + q;
        o[4] = e - q;
        e = 4.0f * d[2] - 5.0f * d[4] + d[6];
        q = 2.0f * d[1] - 2.5f * d[3] + 0.5f * d[5];
        o[5] = e + q;
        o[6] = e - q;
    } else {
        o[0] = 4.0f * d[0] - 5.0f * d[2] + d[4];
        o[5] = 4.0f * d[1] - 5.0f * d[3] + d[5];
        VF e = d[4] - 4.0f * d[2], q = d[3] - 4.0f * d[1];
        o[1] = e + q;
        o[2] = e - q;
        e = d[4] - d[2];
        q = 2.0f * (d[3] - d[1]);
        o[3] = e + q;
        o[4] = e - q;
    }
}

/* A^T g for one row of n vectors: m = n - 2 outputs */
static inline __attribute__((always_inline)) void WK(at)(const VF *g, VF *o, const int n)
{
    VF s12 = g[1] + g[2], d12 = g[1] - g[2];
    if (n == 4) {
        o[0] = g[0] + s12;
        o[1] = d12 + g[3];
        return;
    }
    VF s34 = g[3] + g[4], d34 = g[3] - g[4];
    if (n == 8) {
        VF s56 = g[5] + g[6], d56 = g[5] - g[6];
        o[0] = g[0] + s12 + s34 + 32.0f * s56;
        o[1] = d12 + 2.0f * d34 + 16.0f * d56;
        o[2] = s12 + 4.0f * s34 + 8.0f * s56;
        o[3] = d12 + 8.0f * d34 + 4.0f * d56;
        o[4] = s12 + 16.0f * s34 + 2.0f * s56;
        o[5] = d12 + 32.0f * d34 + d56 + g[7];
    } else {
        o[0] = g[0] + s12 + s34;
        o[1] = d12 + 2.0f * d34;
        o[2] = s12 + 4.0f * s34;
        o[3] = d12 + 8.0f * d34 + g[5];
    }
}

/* a block's first ``live`` lanes (the rest zero): the last block of a channel count that is
   no multiple of LANES, whose other lanes are padding (blocked) or the next pixel (nhwc) */
static inline __attribute__((always_inline)) void WK(load_part)(VF *x, const float *s, int live)
{
    *x = (VF){0};
    for (int l = 0; l < live; l++)
        (*x)[l] = s[l];
}

/* one tile of one channel block into the n*n GEMM inputs */
static inline __attribute__((always_inline)) void WK(in_tile)(const ncnnc_wino *p, const float *src, float *v,
                                                              long t, int b, const int n)
{
    const int m = n - 2, w = p->w, h = p->h;
    const long vstride = (long)p->tiles * p->kp; /* floats from one position's GEMM input to the next */
    const long sp = p->sp, tt = p->tile0 + t;
    const int y0 = (int)(tt / p->tiles_w) * m - p->pad_t, x0 = (int)(tt % p->tiles_w) * m - p->pad_l;
    const float *s = src + (long)b * p->sb;
    const int live = p->c - b * LANES;
    VF d[8][8], r[8][8];
    if (live >= LANES && y0 >= 0 && x0 >= 0 && y0 + n <= h && x0 + n <= w) {
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++)
                d[i][j] = *(const VF *)(s + ((long)(y0 + i) * w + x0 + j) * sp);
    } else {
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++) {
                int y = y0 + i, x = x0 + j;
                if (y < 0 || y >= h || x < 0 || x >= w)
                    d[i][j] = (VF){0};
                else if (live >= LANES)
                    d[i][j] = *(const VF *)(s + ((long)y * w + x) * sp);
                else
                    WK(load_part)(&d[i][j], s + ((long)y * w + x) * sp, live);
            }
    }
    for (int i = 0; i < n; i++)
        WK(bt)(d[i], r[i], n);
    float *out = v + t * p->kp + (long)b * LANES;
    for (int k = 0; k < n; k++) {
        VF col[8], o[8];
        for (int i = 0; i < n; i++)
            col[i] = r[i][k];
        WK(bt)(col, o, n);
        for (int a = 0; a < n; a++)
            *(VF *)(out + (long)(a * n + k) * vstride) = o[a];
    }
}

static inline __attribute__((always_inline)) void WK(activate)(const ncnnc_wino *p, VF *v)
{
    VF x = *v;
    if (p->act == 1) { /* relu, leaky with a slope: a NaN stays, and without a slope every
                          other x <= 0 is 0 (-inf * 0 would be NaN) */
        VI keep = (x > (VF){0}) | (x != x);
        VF neg = p->a0 == 0.f ? (VF){0} : x * p->a0;
        *v = (VF)(((VI)x & keep) | ((VI)neg & ~keep));
    } else if (p->act == 2) { /* clip */
        VI lo = x < (VF){0} + p->a0, hi = x > (VF){0} + p->a1;
        x = (VF)(((VI)x & ~lo) | ((VI)((VF){0} + p->a0) & lo));
        *v = (VF)(((VI)x & ~hi) | ((VI)((VF){0} + p->a1) & hi));
    }
}

/* one tile of output channel block ``b`` from the n*n GEMM outputs, where it is block ``bm``
   of M's rows (a group of the output channels) */
static inline __attribute__((always_inline)) void WK(out_tile)(const ncnnc_wino *p, const float *mm, float *dst,
                                                               long t, int bm, int b, const int n)
{
    const int m = n - 2, ow = p->ow, oh = p->oh;
    const long mstride = (long)p->tiles * p->np, dp = p->dp, tt = p->tile0 + t;
    const int y0 = (int)(tt / p->tiles_w) * m, x0 = (int)(tt % p->tiles_w) * m;
    const float *in = mm + t * p->np + (long)bm * LANES;
    VF g[8][8], r[8][8];
    for (int k = 0; k < n; k++) {
        VF col[8], o[8];
        for (int i = 0; i < n; i++)
            col[i] = *(const VF *)(in + (long)(i * n + k) * mstride);
        WK(at)(col, o, n);
        for (int a = 0; a < m; a++)
            g[a][k] = o[a];
    }
    VF bias = {0};
    if (p->bias)
        bias = *(const VF *)(p->bias + b * LANES);
    const int live = p->oc - b * LANES;
    float *o = dst + (long)b * p->db;
    for (int a = 0; a < m; a++) {
        int y = y0 + a;
        if (y >= oh)
            break;
        WK(at)(g[a], r[a], n);
        for (int c = 0; c < m && x0 + c < ow; c++) {
            VF x = r[a][c] + bias;
            WK(activate)(p, &x);
            float *q = o + ((long)y * ow + x0 + c) * dp;
            if (live >= LANES) {
                *(VF *)q = x;
                continue;
            }
            for (int l = 0; l < live; l++)
                q[l] = x[l];
            if (p->zero_pad) /* oneDNN's blocked layouts keep their padding lanes zero */
                for (int l = live; l < LANES; l++)
                    q[l] = 0.0f;
        }
    }
}

/* the chunk of tiles from p->tile0 on into V (one thread: the caller's loop is the parallel one) */
KATTR static void WK(wino_input)(const ncnnc_wino *p, const float *src, float *v)
{
    const long total = (long)p->tiles * (p->kp / LANES);
    const int blocks = p->kp / LANES;
    if (p->m == 6)
        for (long it = 0; it < total; it++)
            WK(in_tile)(p, src, v, it / blocks, (int)(it % blocks), 8);
    else if (p->m == 4)
        for (long it = 0; it < total; it++)
            WK(in_tile)(p, src, v, it / blocks, (int)(it % blocks), 6);
    else
        for (long it = 0; it < total; it++)
            WK(in_tile)(p, src, v, it / blocks, (int)(it % blocks), 4);
}

/* output channel blocks b0 .. b0 + p->np / LANES - 1 of the chunk from M, whose rows hold
   those blocks alone (one thread) */
KATTR static void WK(wino_output)(const ncnnc_wino *p, const float *mm, float *dst, int b0)
{
    const int blocks = p->np / LANES;
    const long total = (long)p->tiles * blocks;
    if (p->m == 6)
        for (long it = 0; it < total; it++)
            WK(out_tile)(p, mm, dst, it / blocks, (int)(it % blocks), b0 + (int)(it % blocks), 8);
    else if (p->m == 4)
        for (long it = 0; it < total; it++)
            WK(out_tile)(p, mm, dst, it / blocks, (int)(it % blocks), b0 + (int)(it % blocks), 6);
    else
        for (long it = 0; it < total; it++)
            WK(out_tile)(p, mm, dst, it / blocks, (int)(it % blocks), b0 + (int)(it % blocks), 4);
}

#undef VF
#undef VI
#undef WK
#undef WK_CAT
#undef WK_CAT_
