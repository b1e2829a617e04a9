#version 450

// Windowed max/avg pooling and adaptive pooling of elempack 4 blobs: one invocation
// computes one packed output element (4 channels at one position) over a (outw, outh, c/4)
// grid. Padding is virtual exactly as in pooling.comp: the host gives the window origin
// (pad_left/pad_top) and the region whose cells an average counts.

layout (constant_id = 0) const int pooling_type = 0;
layout (constant_id = 1) const int kernel_w = 1;
layout (constant_id = 2) const int kernel_h = 1;
layout (constant_id = 3) const int stride_w = 1;
layout (constant_id = 4) const int stride_h = 1;
layout (constant_id = 5) const int adaptive_pooling = 0;

layout (local_size_x_id = 233, local_size_y_id = 234, local_size_z_id = 235) in;

#include "vulkan_nan.h"

#if NCNN_fp16_packed && !NCNN_fp16_storage
// without 16-bit storage the net keeps every blob fp32, packed ones included
layout (binding = 0) readonly buffer bottom_blob { vec4 bottom_blob_data[]; };
layout (binding = 1) writeonly buffer top_blob { vec4 top_blob_data[]; };
#define blob_ld4(buf, i) afpvec4(buf[i])
#define blob_st4(buf, i, v) {buf[i] = vec4(v);}
#else
layout (binding = 0) readonly buffer bottom_blob { sfpvec4 bottom_blob_data[]; };
layout (binding = 1) writeonly buffer top_blob { sfpvec4 top_blob_data[]; };
#define blob_ld4(buf, i) buffer_ld4(buf, i)
#define blob_st4(buf, i, v) buffer_st4(buf, i, v)
#endif

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

    int count_x0;
    int count_x1;
    int count_y0;
    int count_y1;
} p;

void main()
{
    const int gx = int(gl_GlobalInvocationID.x);
    const int gy = int(gl_GlobalInvocationID.y);
    const int gz = int(gl_GlobalInvocationID.z);

    if (gx >= p.outw || gy >= p.outh || gz >= p.c)
        return;

    int x0;
    int x1;
    int y0;
    int y1;
    if (adaptive_pooling == 1)
    {
        x0 = gx * p.w / p.outw;
        x1 = ((gx + 1) * p.w + p.outw - 1) / p.outw;
        y0 = gy * p.h / p.outh;
        y1 = ((gy + 1) * p.h + p.outh - 1) / p.outh;
    }
    else
    {
        x0 = gx * stride_w - p.pad_left;
        y0 = gy * stride_h - p.pad_top;
        x1 = x0 + kernel_w;
        y1 = y0 + kernel_h;
    }

    // padded taps are -FLT_MAX for max and 0 for avg: both drop out by clipping the window
    int xa = max(x0, 0);
    int xb = min(x1, p.w);
    int ya = max(y0, 0);
    int yb = min(y1, p.h);
    if (pooling_type == 1 && adaptive_pooling == 0)
    {
        xa = max(xa, p.count_x0);
        xb = min(xb, p.count_x1);
        ya = max(ya, p.count_y0);
        yb = min(yb, p.count_y1);
    }

    const int v_offset = gz * p.cstep;
    // fp32 whatever afp is: an average window of large activations (ResNet's 7x7 pool5) sums
    // past fp16's 65504 before it is divided
    // a max starts from the border's -FLT_MAX where the window reaches into it, else from -inf
    // (a window of -inf gives -inf), and keeps a NaN
    const bool cut = xa != x0 || xb != x1 || ya != y0 || yb != y1;
    vec4 res = pooling_type == 0 ? vec4(cut ? -3.402823466e+38f : uintBitsToFloat(0xff800000u)) : vec4(0.f);
    for (int y = ya; y < yb; y++)
    {
        for (int x = xa; x < xb; x++)
        {
            const vec4 v = vec4(blob_ld4(bottom_blob_data, v_offset + y * p.w + x));
            res = pooling_type == 0 ? nan_max(res, v) : res + v;
        }
    }

    if (pooling_type == 1)
    {
        int area;
        if (adaptive_pooling == 1)
            area = (x1 - x0) * (y1 - y0);
        else
            area = max(min(x1, p.count_x1) - max(x0, p.count_x0), 0) * max(min(y1, p.count_y1) - max(y0, p.count_y0), 0);
        res = res / float(area);
    }

    blob_st4(top_blob_data, gz * p.outcstep + gy * p.outw + gx, afpvec4(res));
}
