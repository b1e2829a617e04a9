#version 450

// Windowed max/avg pooling (and adaptive pooling), one output element per invocation.
// Padding is virtual: the host turns every pad mode into an input-space window origin
// (pad_left/pad_top) and, for averages, a counting region (count_*), so full/valid/SAME
// padding and avgpool_count_include_pad need no code variants and no bordered copy.

layout (constant_id = 0) const int pooling_type = 0;
layout (constant_id = 1) const int kernel_w = 1;
layout (constant_id = 2) const int kernel_h = 1;
layout (constant_id = 3) const int stride_w = 1;
layout (constant_id = 4) const int stride_h = 1;
layout (constant_id = 5) const int adaptive_pooling = 0;

layout (local_size_x_id = 233, local_size_y_id = 234, local_size_z_id = 235) in;

layout (binding = 0) readonly buffer bottom_blob { sfp bottom_blob_data[]; };
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
    int area;

    if (adaptive_pooling == 1)
    {
        x0 = gx * p.w / p.outw;
        x1 = ((gx + 1) * p.w + p.outw - 1) / p.outw;
        y0 = gy * p.h / p.outh;
        y1 = ((gy + 1) * p.h + p.outh - 1) / p.outh;
        area = (x1 - x0) * (y1 - y0);
    }
    else
    {
        const int sx0 = gx * stride_w - p.pad_left;
        const int sy0 = gy * stride_h - p.pad_top;

        const int cx = min(sx0 + kernel_w, p.count_x1) - max(sx0, p.count_x0);
        const int cy = min(sy0 + kernel_h, p.count_y1) - max(sy0, p.count_y0);
        area = max(cx, 0) * max(cy, 0);

        // padded taps are -FLT_MAX for max and 0 for avg: both drop out by clipping
        x0 = max(sx0, 0);
        x1 = min(sx0 + kernel_w, p.w);
        y0 = max(sy0, 0);
        y1 = min(sy0 + kernel_h, p.h);

        if (pooling_type == 1)
        {
            // ncnn skips uncounted taps in the sum too, which matters when SAME
            // pad modes leave a counting region that cuts into the input
            x0 = max(x0, p.count_x0);
            x1 = min(x1, p.count_x1);
            y0 = max(y0, p.count_y0);
            y1 = min(y1, p.count_y1);
        }
    }

    const int v_offset = gz * p.cstep;
    afp res;

    if (pooling_type == 0)
    {
        res = afp(-3.402823466e+38f);
        for (int y = y0; y < y1; y++)
        {
            for (int x = x0; x < x1; x++)
            {
                res = max(res, buffer_ld1(bottom_blob_data, v_offset + y * p.w + x));
            }
        }
    }
    else
    {
        res = afp(0.f);
        for (int y = y0; y < y1; y++)
        {
            for (int x = x0; x < x1; x++)
            {
                res += buffer_ld1(bottom_blob_data, v_offset + y * p.w + x);
            }
        }
        res = res / afp(area);
    }

    buffer_st1(top_blob_data, gz * p.outcstep + gy * p.outw + gx, res);
}
