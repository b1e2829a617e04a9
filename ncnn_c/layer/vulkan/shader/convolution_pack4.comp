#version 450

// Direct convolution of an elempack 4 bottom, register-tiled like convolution.comp: one
// invocation computes tile_w output positions along a row (or along the flat plane for
// flat_1x1) x 4*out_groups output channels. A packed input element is 4 input channels
// at one position, so a row window is read as whole vec4s with no alignment shuffle, and
// each tap multiplies it by a 4x4 weight block: per input vec4 group q, tap k and output
// vec4 j the layer uploads 4 vec4s, one per input lane, each holding 4 output channels:
// [outc/(4*out_groups)][inc/4][kh*kw][out_groups][4 in][4 out]. With weight_fp16 = 1 the
// weights are halves, 8 per uvec4 (see convolution.comp); zero-filled past outc.
//
// The top is elempack 4 (out_pack4 = 1, outc a multiple of 4: one vec4 store per output)
// or elempack 1. Padding is virtual as in convolution.comp: taps outside read pad_value.
// Grid: (tiles, outc/(4*out_groups), 1), tiles = ceil(outw/tile_w) * outh, or
// ceil(w*h/tile_w) for flat_1x1.

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
layout (constant_id = 10) const int flat_1x1 = 0;
// output channel vec4s per invocation
layout (constant_id = 11) const int out_groups = 2;
layout (constant_id = 12) const int weight_fp16 = 0;
// output positions per invocation
layout (constant_id = 13) const int tile_w = 8;
layout (constant_id = 14) const int out_pack4 = 1;
// 1: taps are read one by one, no row window is staged (DIRECT TAPS in convolution.comp)
layout (constant_id = 15) const int direct_taps = 0;

layout (local_size_x_id = 233, local_size_y_id = 234, local_size_z_id = 235) in;

#if NCNN_fp16_packed && !NCNN_fp16_storage
// without 16-bit storage the net keeps every blob fp32, packed ones included
layout (binding = 0) readonly buffer bottom_blob { vec4 bottom_blob_data[]; };
layout (binding = 1) writeonly buffer top_blob4 { vec4 top_blob4_data[]; };
#define bottom_ld4(i) afpvec4(bottom_blob_data[i])
#define top_st4(i, v) {top_blob4_data[i] = vec4(v);}
#else
layout (binding = 0) readonly buffer bottom_blob { sfpvec4 bottom_blob_data[]; };
layout (binding = 1) writeonly buffer top_blob4 { sfpvec4 top_blob4_data[]; };
#define bottom_ld4(i) buffer_ld4(bottom_blob_data, i)
#define top_st4(i, v) buffer_st4(top_blob4_data, i, v)
#endif
// the same top as scalars (aliased binding), for an elempack 1 top
layout (binding = 1) writeonly buffer top_blob { sfp top_blob_data[]; };
layout (binding = 2) readonly buffer weight_blob { uvec4 weight_data[]; };
// [outc/(4*out_groups)][out_groups] fp32 vec4s, zero-filled; bound to the weights and
// never read when bias_term == 0
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

    // activation_type 7 (see vulkan_activation.h)
    float act_slope;
    float act_lo;
    float act_hi;
} p;

// input positions one row of taps touches for a tile
// (1 with direct_taps: the window arrays are then unused)
const int window = direct_taps == 1 ? 1 : (tile_w - 1) * stride_w + (kernel_w - 1) * dilation_w + 1;

#define ACTIVATION_PUSH_CONSTANTS
#include "vulkan_activation.h"

// the 4x4 weight block at vec4 index i (a multiple of 4): k[l] = 4 output channels of input lane l
void load_weight_block(int i, out afpvec4 k0, out afpvec4 k1, out afpvec4 k2, out afpvec4 k3)
{
    if (weight_fp16 == 1)
    {
        const uvec4 u0 = weight_data[i / 2];
        const uvec4 u1 = weight_data[i / 2 + 1];
        k0 = afpvec4(vec4(unpackHalf2x16(u0.x), unpackHalf2x16(u0.y)));
        k1 = afpvec4(vec4(unpackHalf2x16(u0.z), unpackHalf2x16(u0.w)));
        k2 = afpvec4(vec4(unpackHalf2x16(u1.x), unpackHalf2x16(u1.y)));
        k3 = afpvec4(vec4(unpackHalf2x16(u1.z), unpackHalf2x16(u1.w)));
    }
    else
    {
        k0 = afpvec4(uintBitsToFloat(weight_data[i]));
        k1 = afpvec4(uintBitsToFloat(weight_data[i + 1]));
        k2 = afpvec4(uintBitsToFloat(weight_data[i + 2]));
        k3 = afpvec4(uintBitsToFloat(weight_data[i + 3]));
    }
}

// output vec4 j of this invocation (channels co..co+3) at flat output position i
void store(afpvec4 sum, int co, int i)
{
    sum = activation(sum);
    if (out_pack4 == 1)
    {
        if (co < p.outc)
            top_st4((co / 4) * p.outcstep + i, sum);
        return;
    }
    if (co < p.outc)
        buffer_st1(top_blob_data, co * p.outcstep + i, sum.x);
    if (co + 1 < p.outc)
        buffer_st1(top_blob_data, (co + 1) * p.outcstep + i, sum.y);
    if (co + 2 < p.outc)
        buffer_st1(top_blob_data, (co + 2) * p.outcstep + i, sum.z);
    if (co + 3 < p.outc)
        buffer_st1(top_blob_data, (co + 3) * p.outcstep + i, sum.w);
}

// STORING A BIG TILE. A CPU device's big tile is stored by a loop over the positions whose
// trip count is only known at run time: each pass stores position 0 and shifts the tile down
// by one position. The compiler then keeps one copy of the store code (activation, conversion
// to the storage type) per output vec4 instead of one per tile element, and the tile stays
// in registers (the shifts are register moves; indexing the tile with the loop counter would
// put it in memory, which llvmpipe compiles slowly). lavapipe's vkCreateComputePipelines runs
// the NIR passes over the whole unrolled shader at every start, warm or cold, and its first
// dispatch compiles the result with LLVM: for an 8 x 32 tile with fp16 storage this halves the
// first (46 -> 23 ms) and more than halves the second. A GPU's small tile is stored unrolled.

void main()
{
    const int gx = int(gl_GlobalInvocationID.x);
    // the local size is (64, 1, 1): the work group id is gy, and it is uniform, so the
    // compiler can tell that every weight and bias index is too (llvmpipe then loads each
    // weight once per work group instead of once per invocation)
    const int gy = int(gl_WorkGroupID.y);

    const int co = gy * 4 * out_groups;
    if (co >= p.outc)
        return;

    // the sums are fp32 whatever afp is: a 4-term partial in afp, then accumulated in fp32
    // (fp16 sums over thousands of taps drift by percents)
    vec4 sum[tile_w][out_groups];
    for (int j = 0; j < out_groups; j++)
    {
        const vec4 b = bias_term == 1 ? bias_data[gy * out_groups + j] : vec4(0.f);
        for (int i = 0; i < tile_w; i++)
            sum[i][j] = b;
    }

    const int maxk = kernel_w * kernel_h;
    int wi = gy * out_groups * p.c * maxk * 4;
    // the last element of the input: reads past it are clamped to it (and never stored)
    const int last = p.c * p.cstep - 1;

    if (flat_1x1 == 1)
    {
        const int size = p.outw * p.outh;
        const int i0 = gx * tile_w;
        if (i0 >= size)
            return;

        int a = i0;
        for (int q = 0; q < p.c; q++)
        {
            afpvec4 v[tile_w];
            for (int i = 0; i < tile_w; i++)
                v[i] = bottom_ld4(min(a + i, last));
            for (int j = 0; j < out_groups; j++)
            {
                afpvec4 k0;
                afpvec4 k1;
                afpvec4 k2;
                afpvec4 k3;
                load_weight_block(wi + j * 4, k0, k1, k2, k3);
                for (int i = 0; i < tile_w; i++)
                    sum[i][j] += vec4(k0 * v[i].x + k1 * v[i].y + k2 * v[i].z + k3 * v[i].w);
            }
            wi += out_groups * 4;
            a += p.cstep;
        }

        if (tile_w * out_groups > 16)
        {
            // a CPU device's big tile: see STORING A BIG TILE above
            const int n = min(tile_w, size - i0);
            for (int i = 0; i < n; i++)
            {
                for (int j = 0; j < out_groups; j++)
                    store(afpvec4(sum[0][j]), co + j * 4, i0 + i);
                for (int k = 0; k + 1 < tile_w; k++)
                {
                    for (int j = 0; j < out_groups; j++)
                        sum[k][j] = sum[k + 1][j];
                }
            }
        }
        else
        {
            for (int i = 0; i < tile_w; i++)
            {
                if (i0 + i < size)
                {
                    for (int j = 0; j < out_groups; j++)
                        store(afpvec4(sum[i][j]), co + j * 4, i0 + i);
                }
            }
        }
        return;
    }

    const int tiles_w = (p.outw + tile_w - 1) / tile_w;
    const int oy = gx / tiles_w;
    const int ox = (gx - oy * tiles_w) * tile_w;
    if (oy >= p.outh)
        return;

    const int sx0 = ox * stride_w - p.pad_left;
    const int sy0 = oy * stride_h - p.pad_top;
    const afpvec4 pad_value = afpvec4(p.pad_value);

    if (direct_taps == 1)
    {
        int v_base = 0;
        for (int q = 0; q < p.c; q++)
        {
            for (int ky = 0; ky < kernel_h; ky++)
            {
                const int sy = sy0 + ky * dilation_h;
                const bool row_inside = sy >= 0 && sy < p.h;
                const int start = v_base + (row_inside ? sy : 0) * p.w;
                for (int kx = 0; kx < kernel_w; kx++)
                {
                    afpvec4 v[tile_w];
                    for (int i = 0; i < tile_w; i++)
                    {
                        const int sx = sx0 + i * stride_w + kx * dilation_w;
                        const afpvec4 x = bottom_ld4(clamp(start + sx, 0, last));
                        v[i] = row_inside && sx >= 0 && sx < p.w ? x : pad_value;
                    }
                    for (int j = 0; j < out_groups; j++)
                    {
                        afpvec4 k0;
                        afpvec4 k1;
                        afpvec4 k2;
                        afpvec4 k3;
                        load_weight_block(wi + j * 4, k0, k1, k2, k3);
                        for (int i = 0; i < tile_w; i++)
                            sum[i][j] += vec4(k0 * v[i].x + k1 * v[i].y + k2 * v[i].z + k3 * v[i].w);
                    }
                    wi += out_groups * 4;
                }
            }
            v_base += p.cstep;
        }
    }

    bool x_inside[window];
    for (int e = 0; e < window; e++)
        x_inside[e] = sx0 + e >= 0 && sx0 + e < p.w;

    int v_offset = 0;
    for (int q = 0; q < p.c * (1 - direct_taps); q++)
    {
        for (int ky = 0; ky < kernel_h; ky++)
        {
            const int sy = sy0 + ky * dilation_h;
            const bool row_inside = sy >= 0 && sy < p.h;
            // a row outside reads row 0 (in bounds) and then pad_value
            const int start = v_offset + (row_inside ? sy : 0) * p.w + sx0;

            afpvec4 row[window];
            for (int e = 0; e < window; e++)
            {
                const afpvec4 x = bottom_ld4(clamp(start + e, 0, last));
                row[e] = row_inside && x_inside[e] ? x : pad_value;
            }

            for (int kx = 0; kx < kernel_w; kx++)
            {
                for (int j = 0; j < out_groups; j++)
                {
                    afpvec4 k0;
                    afpvec4 k1;
                    afpvec4 k2;
                    afpvec4 k3;
                    load_weight_block(wi + j * 4, k0, k1, k2, k3);
                    for (int i = 0; i < tile_w; i++)
                    {
                        const afpvec4 v = row[i * stride_w + kx * dilation_w];
                        sum[i][j] += vec4(k0 * v.x + k1 * v.y + k2 * v.z + k3 * v.w);
                    }
                }
                wi += out_groups * 4;
            }
        }

        v_offset += p.cstep;
    }

    const int i0 = oy * p.outw + ox;
    if (tile_w * out_groups > 16)
    {
        // a CPU device's big tile: see STORING A BIG TILE above
        const int n = min(tile_w, p.outw - ox);
        for (int i = 0; i < n; i++)
        {
            for (int j = 0; j < out_groups; j++)
                store(afpvec4(sum[0][j]), co + j * 4, i0 + i);
            for (int k = 0; k + 1 < tile_w; k++)
            {
                for (int j = 0; j < out_groups; j++)
                    sum[k][j] = sum[k + 1][j];
            }
        }
    }
    else
    {
        for (int i = 0; i < tile_w; i++)
        {
            if (ox + i < p.outw)
            {
                for (int j = 0; j < out_groups; j++)
                    store(afpvec4(sum[i][j]), co + j * 4, i0 + i);
            }
        }
    }
}
