#version 450

// Windowed max/avg pooling and adaptive pooling.
// Padding is virtual: the host turns every pad mode into an input-space window origin
// (pad_left/pad_top) and, for averages, a counting region (count_*), so full/valid/SAME
// padding and avgpool_count_include_pad need no code variants and no bordered copy.
//
// Windowed pooling computes TILE_W outputs of a row per invocation over a
// (ceil(outw/TILE_W), outh, c) grid, reading each input row the tile touches once as
// aligned vec4s (channels start 16-byte aligned): a fraction of the loads of one window
// per output, which is what bounds pooling on CPU-like devices. Adaptive pooling (windows
// of varying size) keeps one output per invocation over (outw, outh, c).

layout (constant_id = 0) const int pooling_type = 0;
layout (constant_id = 1) const int kernel_w = 1;
layout (constant_id = 2) const int kernel_h = 1;
layout (constant_id = 3) const int stride_w = 1;
layout (constant_id = 4) const int stride_h = 1;
layout (constant_id = 5) const int adaptive_pooling = 0;

layout (local_size_x_id = 233, local_size_y_id = 234, local_size_z_id = 235) in;

#include "vulkan_nan.h"

#define TILE_W 8

#if NCNN_fp16_packed && !NCNN_fp16_storage
// fp16_packed packs elempack 4 blobs only: an elempack 1 blob stays fp32
#define bfp float
#define bfpvec4 vec4
#else
#define bfp sfp
#define bfpvec4 sfpvec4
#endif
// the input as vec4s; element i is component i % 4 of vec4 i / 4
layout (binding = 0) readonly buffer bottom_blob { bfpvec4 bottom_blob_data[]; };
layout (binding = 1) writeonly buffer top_blob { sfp top_blob_data[]; };

layout (push_constant) uniform parameter
{
    int w;
    int h;
    int c;
    int cstep;

    int outw;
    int outh;
    int outcstep;

    int pad_left;
    int pad_top;

    // only taps inside [count_x0, count_x1) x [count_y0, count_y1) enter an average
    int count_x0;
    int count_x1;
    int count_y0;
    int count_y1;
} p;

// input columns one row of a tile's windows spans, and the vec4s that cover them at any alignment
const int window = (TILE_W - 1) * stride_w + kernel_w;
const int window_vec4s = (window + 6) / 4;

void pool_tile(int ox, int oy, int q)
{
    const afp neutral = pooling_type == 0 ? afp(-3.402823466e+38f) : afp(0.f);
    const int sx0 = ox * stride_w - p.pad_left;
    const int sy0 = oy * stride_h - p.pad_top;

    // padded taps are -FLT_MAX for max and 0 for avg: both drop out by clipping; ncnn
    // also skips uncounted taps in an average, which matters when SAME pad modes leave
    // a counting region that cuts into the input
    int x_lo = 0;
    int x_hi = p.w;
    int y_lo = 0;
    int y_hi = p.h;
    if (pooling_type == 1)
    {
        x_lo = max(x_lo, p.count_x0);
        x_hi = min(x_hi, p.count_x1);
        y_lo = max(y_lo, p.count_y0);
        y_hi = min(y_hi, p.count_y1);
    }

    bool x_inside[window];
    for (int e = 0; e < window; e++)
        x_inside[e] = sx0 + e >= x_lo && sx0 + e < x_hi;

    // fp32 sums whatever afp is: an average window of large activations can pass fp16's 65504
    // a max starts from -inf (a window of -inf gives -inf; the border's taps are -FLT_MAX) and
    // keeps a NaN
    float res[TILE_W];
    for (int i = 0; i < TILE_W; i++)
        res[i] = pooling_type == 0 ? uintBitsToFloat(0xff800000u) : 0.f;

    const int last4 = p.c * p.cstep / 4 - 1;
    for (int ky = 0; ky < kernel_h; ky++)
    {
        const int sy = sy0 + ky;
        const bool row_inside = sy >= y_lo && sy < y_hi;
        // a row outside reads row 0 (in bounds) and then the neutral value
        const int start = q * p.cstep + (row_inside ? sy : 0) * p.w + sx0;
        const int a = start >> 2;
        const int shift = start & 3;

        afp f[window_vec4s * 4];
        for (int m = 0; m < window_vec4s; m++)
        {
            const afpvec4 v = afpvec4(bottom_blob_data[clamp(a + m, 0, last4)]);
            f[m * 4] = v.x;
            f[m * 4 + 1] = v.y;
            f[m * 4 + 2] = v.z;
            f[m * 4 + 3] = v.w;
        }
        afp row[window];
        for (int e = 0; e < window; e++)
        {
            const afp v = shift == 0 ? f[e] : shift == 1 ? f[e + 1] : shift == 2 ? f[e + 2] : f[e + 3];
            row[e] = row_inside && x_inside[e] ? v : neutral;
        }

        for (int kx = 0; kx < kernel_w; kx++)
        {
            for (int i = 0; i < TILE_W; i++)
            {
                const float v = float(row[i * stride_w + kx]);
                res[i] = pooling_type == 0 ? nan_max(res[i], v) : res[i] + v;
            }
        }
    }

    const int cy = min(sy0 + kernel_h, p.count_y1) - max(sy0, p.count_y0);
    for (int i = 0; i < TILE_W; i++)
    {
        if (ox + i < p.outw)
        {
            float r = res[i];
            if (pooling_type == 1)
            {
                const int sx = sx0 + i * stride_w;
                const int cx = min(sx + kernel_w, p.count_x1) - max(sx, p.count_x0);
                r = r / float(max(cx, 0) * max(cy, 0));
            }
            buffer_st1(top_blob_data, q * p.outcstep + oy * p.outw + ox + i, afp(r));
        }
    }
}

void main()
{
    const int gx = int(gl_GlobalInvocationID.x);
    const int gy = int(gl_GlobalInvocationID.y);
    const int gz = int(gl_GlobalInvocationID.z);

    if (adaptive_pooling == 0)
    {
        if (gx * TILE_W >= p.outw || gy >= p.outh || gz >= p.c)
            return;
        pool_tile(gx * TILE_W, gy, gz);
        return;
    }

    // adaptive: the window of output (gx, gy) spans [floor(gx*w/outw), ceil((gx+1)*w/outw))
    if (gx >= p.outw || gy >= p.outh || gz >= p.c)
        return;

    const int x0 = gx * p.w / p.outw;
    const int x1 = ((gx + 1) * p.w + p.outw - 1) / p.outw;
    const int y0 = gy * p.h / p.outh;
    const int y1 = ((gy + 1) * p.h + p.outh - 1) / p.outh;

    const int v_offset = gz * p.cstep;
    float res = pooling_type == 0 ? uintBitsToFloat(0xff800000u) : 0.f;
    for (int y = y0; y < y1; y++)
    {
        for (int x = x0; x < x1; x++)
        {
            const int i = v_offset + y * p.w + x;
            const float v = float(afpvec4(bottom_blob_data[i / 4])[i % 4]);
            res = pooling_type == 0 ? nan_max(res, v) : res + v;
        }
    }
    if (pooling_type == 1)
        res = res / float((x1 - x0) * (y1 - y0));

    buffer_st1(top_blob_data, gz * p.outcstep + gy * p.outw + gx, afp(res));
}
