#version 450

// Grouped convolution (1 < group, not depthwise) of elempack 1 blobs: one invocation
// computes tile_w outputs along a row x 4 output channels of one group, over a
// (ceil(outw/tile_w) * outh, ceil(outc_g/4), group) grid. Weights are uploaded as
// [group][ceil(outc_g/4)][inc_g][kh*kw] vec4s (4 output channels of one tap, zero past
// outc_g) and the bias as [group][ceil(outc_g/4)] vec4s, fp32 whatever the storage type.
// Padding is virtual as in convolution.comp.

layout (constant_id = 0) const int kernel_w = 1;
layout (constant_id = 1) const int kernel_h = 1;
layout (constant_id = 2) const int dilation_w = 1;
layout (constant_id = 3) const int dilation_h = 1;
layout (constant_id = 4) const int stride_w = 1;
layout (constant_id = 5) const int stride_h = 1;
layout (constant_id = 6) const int bias_term = 0;
layout (constant_id = 7) const int activation_type = 0;
layout (constant_id = 8) const float activation_param_0 = 0;
layout (constant_id = 9) const float activation_param_1 = 0;
// output positions per invocation
layout (constant_id = 10) const int tile_w = 8;

layout (local_size_x_id = 233, local_size_y_id = 234, local_size_z_id = 235) in;

layout (binding = 0) readonly buffer bottom_blob { sfp bottom_blob_data[]; };
layout (binding = 1) writeonly buffer top_blob { sfp top_blob_data[]; };
layout (binding = 2) readonly buffer weight_blob { vec4 weight_data[]; };
// bound to the weights and never read when bias_term == 0
layout (binding = 3) readonly buffer bias_blob { vec4 bias_data[]; };

layout (push_constant) uniform parameter
{
    int w;
    int h;
    int c;
    int cstep;

    int outw;
    int outh;
    int outc;
    int outcstep;

    int pad_left;
    int pad_top;
    float pad_value;

    int inc_g;
    int outc_g;
} p;

// input positions one row of taps touches for a tile
const int window = (tile_w - 1) * stride_w + (kernel_w - 1) * dilation_w + 1;

#include "vulkan_activation.h"

void main()
{
    const int gx = int(gl_GlobalInvocationID.x);
    const int gy = int(gl_GlobalInvocationID.y);
    const int gz = int(gl_GlobalInvocationID.z);

    const int tiles_w = (p.outw + tile_w - 1) / tile_w;
    const int oy = gx / tiles_w;
    const int ox = (gx - oy * tiles_w) * tile_w;
    const int vec4s = (p.outc_g + 3) / 4;
    if (oy >= p.outh || gy >= vec4s || gz * p.outc_g >= p.outc)
        return;

    // products in afp, the running sums in fp32 (docs/gpu-layers.md section 5): a group
    // sums inc_g * kernel taps, too many for fp16
    vec4 sum[tile_w];
    const vec4 b = bias_term == 1 ? bias_data[gz * vec4s + gy] : vec4(0.f);
    for (int i = 0; i < tile_w; i++)
        sum[i] = b;

    const int sx0 = ox * stride_w - p.pad_left;
    const int sy0 = oy * stride_h - p.pad_top;
    const afp pad_value = afp(p.pad_value);
    const int last = p.c * p.cstep - 1;

    bool x_inside[window];
    for (int e = 0; e < window; e++)
        x_inside[e] = sx0 + e >= 0 && sx0 + e < p.w;

    int wi = (gz * vec4s + gy) * p.inc_g * kernel_w * kernel_h;
    for (int q = 0; q < p.inc_g; q++)
    {
        const int base = (gz * p.inc_g + q) * p.cstep;
        for (int ky = 0; ky < kernel_h; ky++)
        {
            const int sy = sy0 + ky * dilation_h;
            const bool row_inside = sy >= 0 && sy < p.h;
            // a row outside reads row 0 (in bounds) and then pad_value
            const int start = base + (row_inside ? sy : 0) * p.w + sx0;

            afp row[window];
            for (int e = 0; e < window; e++)
            {
                const afp x = buffer_ld1(bottom_blob_data, clamp(start + e, 0, last));
                row[e] = row_inside && x_inside[e] ? x : pad_value;
            }
            for (int kx = 0; kx < kernel_w; kx++)
            {
                const afpvec4 k = afpvec4(weight_data[wi + kx]);
                for (int i = 0; i < tile_w; i++)
                    sum[i] += vec4(row[i * stride_w + kx * dilation_w] * k);
            }
            wi += kernel_w;
        }
    }

    const int co = gz * p.outc_g + gy * 4;
    const int i0 = oy * p.outw + ox;
    for (int i = 0; i < tile_w; i++)
    {
        if (ox + i >= p.outw)
            continue;
        const afpvec4 v = activation(afpvec4(sum[i]));
        if (gy * 4 < p.outc_g)
            buffer_st1(top_blob_data, co * p.outcstep + i0 + i, v.x);
        if (gy * 4 + 1 < p.outc_g)
            buffer_st1(top_blob_data, (co + 1) * p.outcstep + i0 + i, v.y);
        if (gy * 4 + 2 < p.outc_g)
            buffer_st1(top_blob_data, (co + 2) * p.outcstep + i0 + i, v.z);
        if (gy * 4 + 3 < p.outc_g)
            buffer_st1(top_blob_data, (co + 3) * p.outcstep + i0 + i, v.w);
    }
}
