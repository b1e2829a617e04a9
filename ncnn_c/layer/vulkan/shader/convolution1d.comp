#version 450

// Convolution1D of an elempack 1 2-D bottom (h = input channels, w = length; rows w
// elements apart): one invocation computes tile_w outputs along the row x 4*out_groups
// output channels, over a (ceil(outw/tile_w), ceil(outc/(4*out_groups)), 1) grid; the
// layer picks the tile per device type. Per tap it loads out_groups weight vec4s (4
// output channels each) and uses each on the whole row tile: weights are
// [ceil(outc/(4*out_groups))][inc][kw][out_groups] vec4s. Padding is virtual: taps
// outside the row read pad_value, so SAME pads cost nothing extra. The bias is
// [ceil(outc/(4*out_groups))][out_groups] vec4s; weights and bias are fp32 whatever the
// storage type, zero-filled past outc.
//
// The top is elempack 1, or elempack 4 with out_pack4 = 1 (outc a multiple of 4: each
// output vec4 is one packed element, one store). Elempack 4 bottoms go to
// convolution1d_pack4.comp.

layout (constant_id = 0) const int kernel_w = 1;
layout (constant_id = 1) const int dilation_w = 1;
layout (constant_id = 2) const int stride_w = 1;
layout (constant_id = 3) const int bias_term = 0;
layout (constant_id = 4) const int activation_type = 0;
layout (constant_id = 5) const float activation_param_0 = 0;
layout (constant_id = 6) const float activation_param_1 = 0;
// output positions per invocation
layout (constant_id = 7) const int tile_w = 8;
layout (constant_id = 8) const int out_pack4 = 0;
// output channel vec4s per invocation
layout (constant_id = 9) const int out_groups = 1;

layout (local_size_x_id = 233, local_size_y_id = 234, local_size_z_id = 235) in;

layout (binding = 0) readonly buffer bottom_blob { sfp bottom_blob_data[]; };
layout (binding = 1) writeonly buffer top_blob { sfp top_blob_data[]; };
// the same top as packed elements (aliased binding), for out_pack4 = 1
#if NCNN_fp16_packed && !NCNN_fp16_storage
layout (binding = 1) writeonly buffer top_blob4 { vec4 top_blob4_data[]; };
#define top_st4(i, v) {top_blob4_data[i] = vec4(v);}
#else
layout (binding = 1) writeonly buffer top_blob4 { sfpvec4 top_blob4_data[]; };
#define top_st4(i, v) buffer_st4(top_blob4_data, i, v)
#endif
#define LOAD(i) buffer_ld1(bottom_blob_data, i)
layout (binding = 2) readonly buffer weight_blob { vec4 weight_data[]; };
// bound to the weights and never read when bias_term == 0
layout (binding = 3) readonly buffer bias_blob { vec4 bias_data[]; };

layout (push_constant) uniform parameter
{
    int w;
    // rows of the bottom (packed elements for elempack 4)
    int h;
    int outw;
    int outc;
    int pad_left;
    float pad_value;
} p;

// input positions one tile's taps touch
const int window = (tile_w - 1) * stride_w + (kernel_w - 1) * dilation_w + 1;

#include "vulkan_activation.h"


void main()
{
    const int gx = int(gl_GlobalInvocationID.x);
    // the local size is (64, 1, 1): the work group id is gy, and it is uniform, so the
    // compiler can tell that every weight and bias index is too (llvmpipe then loads each
    // weight once per work group instead of once per invocation)
    const int gy = int(gl_WorkGroupID.y);

    const int ox = gx * tile_w;
    const int co0 = gy * 4 * out_groups;
    if (ox >= p.outw || co0 >= p.outc)
        return;

    // fp32 sums whatever afp is: products in afp, accumulated in fp32 (fp16 sums over
    // many taps drift by percents)
    vec4 sum[tile_w][out_groups];
    for (int j = 0; j < out_groups; j++)
    {
        const vec4 b = bias_term == 1 ? vec4(bias_data[gy * out_groups + j]) : vec4(0.f);
        for (int i = 0; i < tile_w; i++)
            sum[i][j] = b;
    }

    const int sx0 = ox * stride_w - p.pad_left;
    const afp pad_value = afp(p.pad_value);
    const int last = p.h * p.w - 1;

    bool x_inside[window];
    for (int e = 0; e < window; e++)
        x_inside[e] = sx0 + e >= 0 && sx0 + e < p.w;

    int wi = gy * out_groups * p.h * kernel_w;
    for (int q = 0; q < p.h; q++)
    {
        const int start = q * p.w + sx0;
        afp row[window];
        for (int e = 0; e < window; e++)
        {
            // reads outside the row are clamped into the blob, then replaced by pad_value
            const afp x = LOAD(clamp(start + e, 0, last));
            row[e] = x_inside[e] ? x : pad_value;
        }
        for (int kx = 0; kx < kernel_w; kx++)
        {
            for (int j = 0; j < out_groups; j++)
            {
                const afpvec4 k = afpvec4(weight_data[wi + j]);
                for (int i = 0; i < tile_w; i++)
                    sum[i][j] += vec4(row[i * stride_w + kx * dilation_w] * k);
            }
            wi += out_groups;
        }
    }

    for (int i = 0; i < tile_w; i++)
    {
        if (ox + i >= p.outw)
            break;
        for (int j = 0; j < out_groups; j++)
        {
            const int co = co0 + j * 4;
            if (co >= p.outc)
                break;
            const afpvec4 v = activation(afpvec4(sum[i][j]));
            if (out_pack4 == 1)
            {
                top_st4((co / 4) * p.outw + ox + i, v);
                continue;
            }
            const int o = co * p.outw + ox + i;
            buffer_st1(top_blob_data, o, v.x);
            if (co + 1 < p.outc)
                buffer_st1(top_blob_data, o + p.outw, v.y);
            if (co + 2 < p.outc)
                buffer_st1(top_blob_data, o + 2 * p.outw, v.z);
            if (co + 3 < p.outc)
                buffer_st1(top_blob_data, o + 3 * p.outw, v.w);
        }
    }
}
