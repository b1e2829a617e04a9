#version 450

// Convolution of an elempack 4 bottom into an elempack 4 top as an implicit GEMM, for GPUs.
//
// GEMM view: rows M = output channel vec4s, columns N = outw*outh output positions, and the
// reduction K = (c/4) * kernel_h*kernel_w "taps", one 4x4 weight block each: tap z reads
// input vec4 q = z / maxk at kernel offset z % maxk. The input is never im2col'ed in
// memory: a work group gathers the slice of columns it needs straight from the bottom
// (virtual padding: taps outside the input read pad_value, as convolution_pack4.comp).
//
// A work group (inv_n x inv_m invocations) computes a tile of tile_m = inv_m*vec4_per_inv
// output vec4s x tile_n = inv_n*pos_per_inv positions. It walks K in steps of kb taps:
// every invocation loads a share of the step's input slice [kb][tile_n] and weight slice
// [kb][4 in][tile_m] into shared memory (the next step's loads are issued into registers
// before this step's arithmetic, hiding their latency), then multiplies pos_per_inv
// positions (strided by inv_n, so neighbouring invocations read and store neighbouring
// positions) by vec4_per_inv output vec4s out of shared memory, summing each step's
// products in afp and the steps in fp32.
//
// Weights (uploaded by the layer, zero-filled past outc and past K): per M tile and K step
// one contiguous slice in shared-memory order,
// [outc/(4*tile_m)][K/kb][kb][4 in][tile_m][4 out] vec4s, or the same as halves (one uvec2
// per vec4) with weight_fp16 = 1. Bias: [outc/4 rounded up to tile_m] vec4s.
// Grid: (ceil(N / tile_n) * inv_n*inv_m, ceil(outc/4 / tile_m), 1); local size
// (inv_n*inv_m, 1, 1).

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
// 1x1 stride 1 without pads: a column is one input position, no tap arithmetic
layout (constant_id = 10) const int flat_1x1 = 0;
layout (constant_id = 11) const int weight_fp16 = 0;
// invocations of a work group along N and along M
layout (constant_id = 12) const int inv_n = 8;
layout (constant_id = 13) const int inv_m = 8;
// output positions and output vec4s per invocation
layout (constant_id = 14) const int pos_per_inv = 4;
layout (constant_id = 15) const int vec4_per_inv = 1;
// taps (4x4 blocks) per K step
layout (constant_id = 16) const int kb = 16;

layout (local_size_x_id = 233, local_size_y_id = 234, local_size_z_id = 235) in;

#if NCNN_fp16_packed && !NCNN_fp16_storage
// without 16-bit storage the net keeps every blob fp32, packed ones included
layout (binding = 0) readonly buffer bottom_blob { vec4 bottom_blob_data[]; };
layout (binding = 1) writeonly buffer top_blob { vec4 top_blob_data[]; };
#define bottom_ld4(i) afpvec4(bottom_blob_data[i])
#define top_st4(i, v) {top_blob_data[i] = vec4(v);}
#else
layout (binding = 0) readonly buffer bottom_blob { sfpvec4 bottom_blob_data[]; };
layout (binding = 1) writeonly buffer top_blob { sfpvec4 top_blob_data[]; };
#define bottom_ld4(i) buffer_ld4(bottom_blob_data, i)
#define top_st4(i, v) buffer_st4(top_blob_data, i, v)
#endif
// the weights as fp32 vec4s, or (aliased) as halves, one uvec2 per vec4
layout (binding = 2) readonly buffer weight_blob { vec4 weight_data[]; };
layout (binding = 2) readonly buffer weight_blob_h { uvec2 weight_h_data[]; };
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

    // activation_type 7 (see vulkan_activation.h)
    float act_slope;
    float act_lo;
    float act_hi;
} p;

const int lsize = inv_n * inv_m;
const int tile_n = inv_n * pos_per_inv;
const int tile_m = inv_m * vec4_per_inv;
// shared-memory elements each invocation fills per step (the layer picks tiles that divide)
const int v_per_inv = kb * tile_n / lsize;
const int k_per_inv = kb * 4 * tile_m / lsize;

shared afpvec4 tmp_v[kb * tile_n];
shared afpvec4 tmp_k[kb * 4 * tile_m];

#define ACTIVATION_PUSH_CONSTANTS
#include "vulkan_activation.h"

afpvec4 load_weight(int i)
{
    if (weight_fp16 == 1)
    {
        const uvec2 u = weight_h_data[i];
        return afpvec4(vec4(unpackHalf2x16(u.x), unpackHalf2x16(u.y)));
    }
    return afpvec4(weight_data[i]);
}

// tap z of a column: its output position is in the plane (ok), its window starts at input
// row sy0, column sx0, flat offset base (the position itself for flat_1x1). Taps past K read
// 0, which meets zero weights; taps in the padding read pad_value.
afpvec4 gather(int z, bool ok, int sy0, int sx0, int base, int K)
{
    if (!ok || z >= K)
        return afpvec4(0.f);
    if (flat_1x1 == 1)
        return bottom_ld4(z * p.cstep + base);
    const int maxk = kernel_w * kernel_h;
    const int q = z / maxk;
    const int k = z - q * maxk;
    const int ky = k / kernel_w;
    const int kx = k - ky * kernel_w;
    const int sy = sy0 + ky * dilation_h;
    const int sx = sx0 + kx * dilation_w;
    if (sy < 0 || sy >= p.h || sx < 0 || sx >= p.w)
        return afpvec4(p.pad_value);
    return bottom_ld4(q * p.cstep + base + ky * dilation_h * p.w + kx * dilation_w);
}

void main()
{
    const int lid = int(gl_LocalInvocationID.x);
    const int lx = lid % inv_n;
    const int ly = lid / inv_n;
    const int n0 = int(gl_WorkGroupID.x) * tile_n;
    const int m0 = int(gl_WorkGroupID.y) * tile_m;

    const int size = p.outw * p.outh;
    const int maxk = kernel_w * kernel_h;
    const int K = p.c * maxk;
    const int steps = (K + kb - 1) / kb;

    // the columns this invocation gathers: element e = lid + r*lsize of a step's input slice
    // is tap e / tile_n of position n0 + e % tile_n
    int v_zz[v_per_inv];
    int v_base[v_per_inv];
    int v_sy[v_per_inv];
    int v_sx[v_per_inv];
    bool v_ok[v_per_inv];
    for (int r = 0; r < v_per_inv; r++)
    {
        const int e = lid + r * lsize;
        v_zz[r] = e / tile_n;
        const int n = n0 + e % tile_n;
        v_ok[r] = n < size;
        const int oy = n / p.outw;
        const int ox = n - oy * p.outw;
        v_sy[r] = oy * stride_h - p.pad_top;
        v_sx[r] = ox * stride_w - p.pad_left;
        v_base[r] = flat_1x1 == 1 ? n : v_sy[r] * p.w + v_sx[r];
    }

    // this work group's weights: one contiguous slice of kb*4*tile_m vec4s per step
    int wi = int(gl_WorkGroupID.y) * steps * kb * 4 * tile_m + lid;

    afpvec4 rv[v_per_inv];
    afpvec4 rk[k_per_inv];

    // step 0 into registers
    for (int r = 0; r < v_per_inv; r++)
        rv[r] = gather(v_zz[r], v_ok[r], v_sy[r], v_sx[r], v_base[r], K);
    for (int r = 0; r < k_per_inv; r++)
        rk[r] = load_weight(wi + r * lsize);

    // a step's products add up in afp (fp16 with fp16 arithmetic), the steps in fp32: an
    // fp16 running sum over K = 4608 taps (512 channels x 3x3) drifts by ~5e-3 relative
    vec4 total[pos_per_inv][vec4_per_inv];
    for (int j = 0; j < vec4_per_inv; j++)
    {
        const int m = m0 + ly * vec4_per_inv + j;
        const vec4 b = bias_term == 1 ? bias_data[m] : vec4(0.f);
        for (int i = 0; i < pos_per_inv; i++)
            total[i][j] = b;
    }

    for (int s = 0; s < steps; s++)
    {
        // the previous step's arithmetic is done with shared memory
        barrier();
        for (int r = 0; r < v_per_inv; r++)
            tmp_v[lid + r * lsize] = rv[r];
        for (int r = 0; r < k_per_inv; r++)
            tmp_k[lid + r * lsize] = rk[r];
        barrier();

        // the next step's loads, in flight during this step's arithmetic
        if (s + 1 < steps)
        {
            const int z0 = (s + 1) * kb;
            for (int r = 0; r < v_per_inv; r++)
                rv[r] = gather(z0 + v_zz[r], v_ok[r], v_sy[r], v_sx[r], v_base[r], K);
            wi += kb * 4 * tile_m;
            for (int r = 0; r < k_per_inv; r++)
                rk[r] = load_weight(wi + r * lsize);
        }

        afpvec4 sum[pos_per_inv][vec4_per_inv];
        for (int j = 0; j < vec4_per_inv; j++)
        {
            for (int i = 0; i < pos_per_inv; i++)
                sum[i][j] = afpvec4(0.f);
        }
        for (int zz = 0; zz < kb; zz++)
        {
            afpvec4 v[pos_per_inv];
            for (int i = 0; i < pos_per_inv; i++)
                v[i] = tmp_v[zz * tile_n + lx + i * inv_n];
            for (int j = 0; j < vec4_per_inv; j++)
            {
                const int kbase = zz * 4 * tile_m + ly * vec4_per_inv + j;
                const afpmat4 k = afpmat4(
                    tmp_k[kbase], tmp_k[kbase + tile_m], tmp_k[kbase + 2 * tile_m], tmp_k[kbase + 3 * tile_m]);
                for (int i = 0; i < pos_per_inv; i++)
                    sum[i][j] += k * v[i];
            }
        }
        for (int j = 0; j < vec4_per_inv; j++)
        {
            for (int i = 0; i < pos_per_inv; i++)
                total[i][j] += vec4(sum[i][j]);
        }
    }

    const int outc4 = p.outc / 4;
    for (int j = 0; j < vec4_per_inv; j++)
    {
        const int m = m0 + ly * vec4_per_inv + j;
        if (m >= outc4)
            continue;
        for (int i = 0; i < pos_per_inv; i++)
        {
            const int n = n0 + lx + i * inv_n;
            if (n < size)
                top_st4(m * p.outcstep + n, activation(afpvec4(total[i][j])));
        }
    }
}
