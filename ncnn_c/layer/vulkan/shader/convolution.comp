#version 450

// Direct convolution, register-tiled: one invocation computes tile_w output positions
// along a row x 4*out_groups output channels (the layer picks 16 x 16 for 1x1 kernels,
// 8 x 8 otherwise; on lavapipe, tiles much larger than 16 x 16 fall off a cliff when the
// accumulators no longer fit in registers). Per tap it loads out_groups weight vec4s (the
// layer uploads weights as [outc/(4*out_groups)][c][kh*kw][out_groups][4], so one vec4
// is 4 output channels of one tap) and reads its inputs from a window of the input row
// fetched as aligned vec4s, so every loaded value feeds 4*out_groups or tile_w
// multiply-adds. Loads, not arithmetic, bound a convolution on CPU-like devices
// (lavapipe fetches every per-invocation load lane by lane); GPUs gain the same reuse.
//
// Weights that are all exactly representable in fp16 (models stored as fp16, such as
// SqueezeNet's) are uploaded as halves, weight_fp16 = 1: one 16-byte load then brings
// two weight vec4s and the result is bit-identical to fp32 weights. Either way the
// buffer is read as uvec4s: fp32 weights are their bit patterns.
//
// Padding is not materialised: taps outside the input read pad_value, so the layer
// needs no temporary bordered blob and SAME pads (-233/-234) cost nothing extra.
// Code-changing params are specialization constants; shapes and pads are push
// constants so one pipeline serves every input size. The grid is
// (tiles, outc/(4*out_groups), 1) with tiles = ceil(outw/tile_w) * outh. flat_1x1 = 1
// selects the 1x1 stride-1 unpadded variant, which tiles the flat w*h plane
// (tiles = ceil(w*h/tile_w)), so its loads are aligned and need no masking; it shares
// this file so the activations exist only once.
//
// The bottom is elempack 1 with cstep a multiple of 4 elements (16-byte aligned channels),
// which is what makes the vec4 view of the input valid. The top is elempack 1, or 4 with
// out_pack4 = 1 (then outcstep counts packed elements). Elempack 4 bottoms go to
// convolution_pack4.comp.

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
// output channel vec4s per invocation, even (weights load in pairs): 2 or 4
layout (constant_id = 11) const int out_groups = 2;
// 1: the weights were uploaded as halves (see above)
layout (constant_id = 12) const int weight_fp16 = 0;
// output positions per invocation, a multiple of 4
layout (constant_id = 13) const int tile_w = 8;
// 1: the top blob is elempack 4 (outc a multiple of 4): each output vec4 is one store
layout (constant_id = 14) const int out_pack4 = 0;
// 1: taps are read one by one (direct_taps below), no row window is staged
layout (constant_id = 15) const int direct_taps = 0;

layout (local_size_x_id = 233, local_size_y_id = 234, local_size_z_id = 235) in;

#if NCNN_fp16_packed && !NCNN_fp16_storage
// fp16_packed packs elempack 4 blobs only: an elempack 1 blob stays fp32
layout (binding = 0) readonly buffer bottom_blob { vec4 bottom_blob_data[]; };
#define bottom_ld4(i) afpvec4(bottom_blob_data[i])
#else
layout (binding = 0) readonly buffer bottom_blob { sfpvec4 bottom_blob_data[]; };
#define bottom_ld4(i) buffer_ld4(bottom_blob_data, i)
#endif
layout (binding = 1) writeonly buffer top_blob { sfp top_blob_data[]; };
// the same top as packed elements (aliased binding), for out_pack4 = 1
#if NCNN_fp16_packed && !NCNN_fp16_storage
layout (binding = 1) writeonly buffer top_blob4 { vec4 top_blob4_data[]; };
#define top_st4(i, v) {top_blob4_data[i] = vec4(v);}
#else
layout (binding = 1) writeonly buffer top_blob4 { sfpvec4 top_blob4_data[]; };
#define top_st4(i, v) buffer_st4(top_blob4_data, i, v)
#endif
// output channels past outc are zero-filled; fp32 bit patterns, or 8 halves per uvec4
layout (binding = 2) readonly buffer weight_blob { uvec4 weight_data[]; };
// [outc/(4*out_groups)][out_groups] fp32 vec4s whatever the storage type (uploaded once,
// read once per invocation), zero-filled; bound to the weights when bias_term == 0, never
// read then
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

// input columns one row of taps touches for a tile, and the vec4s that cover them at
// any alignment
// (1 with direct_taps: the window arrays are then unused)
const int window = direct_taps == 1 ? 1 : (tile_w - 1) * stride_w + (kernel_w - 1) * dilation_w + 1;
const int window_vec4s = (window + 6) / 4;

#define ACTIVATION_PUSH_CONSTANTS
#include "vulkan_activation.h"

// weight vec4s i and i + 1 (i even: out_groups is), each 4 output channels of one tap
void load_weight_pair(int i, out afpvec4 k0, out afpvec4 k1)
{
    if (weight_fp16 == 1)
    {
        const uvec4 u = weight_data[i / 2];
        k0 = afpvec4(vec4(unpackHalf2x16(u.x), unpackHalf2x16(u.y)));
        k1 = afpvec4(vec4(unpackHalf2x16(u.z), unpackHalf2x16(u.w)));
    }
    else
    {
        k0 = afpvec4(uintBitsToFloat(weight_data[i]));
        k1 = afpvec4(uintBitsToFloat(weight_data[i + 1]));
    }
}

// the 4 output channels co.. of sum at flat output position i
void store4(afpvec4 sum, int co, int i)
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

    // the sums are fp32 whatever afp is: products in afp, accumulated in fp32 (fp16 sums
    // over thousands of taps drift by percents)
    vec4 sum[tile_w][out_groups];
    for (int j = 0; j < out_groups; j++)
    {
        const vec4 b = bias_term == 1 ? vec4(bias_data[gy * out_groups + j]) : vec4(0.f);
        for (int i = 0; i < tile_w; i++)
            sum[i][j] = b;
    }

    const int maxk = kernel_w * kernel_h;
    int wi = gy * out_groups * p.c * maxk;
    // the last vec4 of the input: window reads past either end are clamped to it (and masked)
    const int last4 = p.c * p.cstep / 4 - 1;

    if (flat_1x1 == 1)
    {
        const int size = p.outw * p.outh;
        const int i0 = gx * tile_w;
        if (i0 >= size)
            return;

        int a = i0 / 4;
        for (int q = 0; q < p.c; q++)
        {
            afp v[tile_w];
            for (int m = 0; m < tile_w / 4; m++)
            {
                // the tail of the last channel may run past the blob: clamp, never stored
                const afpvec4 x = bottom_ld4(min(a + m, last4));
                v[m * 4] = x.x;
                v[m * 4 + 1] = x.y;
                v[m * 4 + 2] = x.z;
                v[m * 4 + 3] = x.w;
            }
            for (int j = 0; j < out_groups; j += 2)
            {
                afpvec4 k0;
                afpvec4 k1;
                load_weight_pair(wi + j, k0, k1);
                for (int i = 0; i < tile_w; i++)
                {
                    sum[i][j] += vec4(v[i] * k0);
                    sum[i][j + 1] += vec4(v[i] * k1);
                }
            }
            wi += out_groups;
            a += p.cstep / 4;
        }

        if (tile_w * out_groups > 16)
        {
            // a CPU device's big tile: see STORING A BIG TILE above
            const int n = min(tile_w, size - i0);
            for (int i = 0; i < n; i++)
            {
                for (int j = 0; j < out_groups; j++)
                    store4(afpvec4(sum[0][j]), co + j * 4, i0 + i);
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
                        store4(afpvec4(sum[i][j]), co + j * 4, i0 + i);
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
    const afp pad_value = afp(p.pad_value);

    // DIRECT TAPS. A kernel whose taps barely overlap between neighbouring outputs (stride near
    // the kernel size: a ViT's 32x32 stride-32 patch embedding) gains nothing from the row
    // window, which would span tile_w * stride inputs (512 for that layer at 16 positions) in
    // private arrays per invocation. llvmpipe keeps such arrays on a small per-invocation
    // stack and computes wrong results past it (outputs dropped or garbled, from a few KiB of
    // window), so the layer sets direct_taps = 1 for a window over MAX_WINDOW and each tap
    // reads its tile_w inputs directly.
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
                    afp v[tile_w];
                    for (int i = 0; i < tile_w; i++)
                    {
                        const int sx = sx0 + i * stride_w + kx * dilation_w;
                        const int e = clamp(start + sx, 0, last4 * 4 + 3);
                        const afp x = bottom_ld4(e >> 2)[e & 3];
                        v[i] = row_inside && sx >= 0 && sx < p.w ? x : pad_value;
                    }
                    for (int j = 0; j < out_groups; j += 2)
                    {
                        afpvec4 k0;
                        afpvec4 k1;
                        load_weight_pair(wi + j, k0, k1);
                        for (int i = 0; i < tile_w; i++)
                        {
                            sum[i][j] += vec4(v[i] * k0);
                            sum[i][j + 1] += vec4(v[i] * k1);
                        }
                    }
                    wi += out_groups;
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
            const int a = start >> 2;
            const int shift = start & 3;

            afp f[window_vec4s * 4];
            for (int m = 0; m < window_vec4s; m++)
            {
                const afpvec4 x = bottom_ld4(clamp(a + m, 0, last4));
                f[m * 4] = x.x;
                f[m * 4 + 1] = x.y;
                f[m * 4 + 2] = x.z;
                f[m * 4 + 3] = x.w;
            }
            // the window starts shift elements into the first vec4
            afp row[window];
            for (int e = 0; e < window; e++)
            {
                const afp v = shift == 0 ? f[e] : shift == 1 ? f[e + 1] : shift == 2 ? f[e + 2] : f[e + 3];
                row[e] = row_inside && x_inside[e] ? v : pad_value;
            }

            for (int kx = 0; kx < kernel_w; kx++)
            {
                for (int j = 0; j < out_groups; j += 2)
                {
                    afpvec4 k0;
                    afpvec4 k1;
                    load_weight_pair(wi + j, k0, k1);
                    for (int i = 0; i < tile_w; i++)
                    {
                        const afp v = row[i * stride_w + kx * dilation_w];
                        sum[i][j] += vec4(v * k0);
                        sum[i][j + 1] += vec4(v * k1);
                    }
                }
                wi += out_groups;
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
                store4(afpvec4(sum[0][j]), co + j * 4, i0 + i);
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
                    store4(afpvec4(sum[i][j]), co + j * 4, i0 + i);
            }
        }
    }
}
