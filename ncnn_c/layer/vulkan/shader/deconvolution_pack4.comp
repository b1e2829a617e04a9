#version 450

// Transposed convolution (Deconvolution, and DeconvolutionDepthWise with several channels
// per group) of an elempack 4 bottom (inc_g a multiple of 4), as a gather. Output (ox,
// oy) is full-output position (ox + crop_left, oy + crop_top); input (sx, sy) reaches it
// through tap (kx, ky) when sx * stride_w + kx * dilation_w equals it (likewise in y), so
// each tap either hits one input pixel or none, and the crop, output_pad and
// output_w/output_h forms all reduce to that offset and the output size (the layer takes
// them from the CPU class's geometry). Outputs of one row whose x differ by stride_w are
// hit by the same taps, from consecutive input columns: one invocation computes tile_w of
// them (ox0, ox0 + stride_w, ...) x 4 output channels of one group, so each weight load
// feeds tile_w outputs. The grid is (outh * stride_w * tiles, ceil(outc_g/4), group), x
// ordered (row, phase = ox0 % stride_w, tile) with tiles =
// ceil(ceil(outw/stride_w)/tile_w). A packed input element is 4 input channels of one
// group at one position, read as one vec4; each hit tap multiplies it by a 4x4 weight
// block, 4 vec4s (one per input lane, each 4 output channels):
// [group][ceil(outc_g/4)][inc_g/4][kh*kw][4 in][4 out], zero past outc_g; the bias is
// [group][ceil(outc_g/4)] vec4s; fp32 whatever the storage type.
//
// The top is elempack 4 (out_pack4 = 1, outc_g a multiple of 4: one vec4 store per
// output) or elempack 1. Elempack 1 bottoms go to deconvolution.comp.

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
layout (constant_id = 10) const int out_pack4 = 0;
// outputs per invocation, stride_w apart along a row
layout (constant_id = 11) const int tile_w = 4;

// added to a tap offset to keep it non-negative: a multiple of stride_w past the kernel extent
const int x_bias = ((kernel_w - 1) * dilation_w / stride_w + 1) * stride_w;

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

    int crop_left;
    int crop_top;
    int inc_g;
    int outc_g;
} p;

#include "vulkan_activation.h"

void main()
{
    const int gx = int(gl_GlobalInvocationID.x);
    const int gy = int(gl_GlobalInvocationID.y);
    const int gz = int(gl_GlobalInvocationID.z);

    // gx = (oy, phase, tile): the outputs of one phase (ox % stride_w) along a row are
    // stride_w apart and gather from consecutive input columns through the same taps
    const int tiles = ((p.outw + stride_w - 1) / stride_w + tile_w - 1) / tile_w;
    const int oy = gx / (stride_w * tiles);
    const int r = gx - oy * (stride_w * tiles);
    const int phase = r / tiles;
    const int ox0 = phase + (r - phase * tiles) * tile_w * stride_w;

    const int vec4s = (p.outc_g + 3) / 4;
    if (oy >= p.outh || ox0 >= p.outw || gy >= vec4s || gz * p.outc_g >= p.outc)
        return;

    const int fy = oy + p.crop_top;

    // fp32 sums whatever afp is: products in afp, accumulated in fp32 (fp16 sums over
    // many taps drift by percents)
    vec4 sum[tile_w];
    const vec4 b = bias_term == 1 ? vec4(bias_data[gz * vec4s + gy]) : vec4(0.f);
    for (int i = 0; i < tile_w; i++)
        sum[i] = b;

    const int maxk = kernel_w * kernel_h;
    const int incq = p.inc_g / 4;
    const int wbase = (gz * vec4s + gy) * incq * maxk * 4;
    for (int ky = 0; ky < kernel_h; ky++)
    {
        const int ty = fy - ky * dilation_h;
        const int sy = ty / stride_h;
        if (ty < 0 || sy * stride_h != ty || sy >= p.h)
            continue;
        for (int kx = 0; kx < kernel_w; kx++)
        {
            // kept non-negative by x_bias (a multiple of stride_w) so that % and / are exact
            const int tx = ox0 + p.crop_left - kx * dilation_w + x_bias;
            if (tx % stride_w != 0)
                continue;
            // the input column of output i is sx0 + i
            const int sx0 = tx / stride_w - x_bias / stride_w;
            if (sx0 >= p.w || sx0 + tile_w <= 0)
                continue;
            int xi[tile_w];
            bool inside[tile_w];
            for (int i = 0; i < tile_w; i++)
            {
                inside[i] = sx0 + i >= 0 && sx0 + i < p.w;
                xi[i] = clamp(sx0 + i, 0, p.w - 1);
            }
            int v = (gz * incq) * p.cstep + sy * p.w;
            int wi = wbase + (ky * kernel_w + kx) * 4;
            for (int q = 0; q < incq; q++)
            {
                const afpvec4 k0 = afpvec4(weight_data[wi]);
                const afpvec4 k1 = afpvec4(weight_data[wi + 1]);
                const afpvec4 k2 = afpvec4(weight_data[wi + 2]);
                const afpvec4 k3 = afpvec4(weight_data[wi + 3]);
                for (int i = 0; i < tile_w; i++)
                {
                    const afpvec4 x = inside[i] ? bottom_ld4(v + xi[i]) : afpvec4(0.f);
                    sum[i] += vec4(k0 * x.x + k1 * x.y + k2 * x.z + k3 * x.w);
                }
                v += p.cstep;
                wi += maxk * 4;
            }
        }
    }

    const int co = gz * p.outc_g + gy * 4;
    const int o0 = oy * p.outw + ox0;
    for (int i = 0; i < tile_w; i++)
    {
        if (ox0 + i * stride_w >= p.outw)
            break;
        const afpvec4 v = activation(afpvec4(sum[i]));
        const int o = o0 + i * stride_w;
        if (out_pack4 == 1)
        {
            top_st4((co / 4) * p.outcstep + o, v);
            continue;
        }
        if (gy * 4 < p.outc_g)
            buffer_st1(top_blob_data, co * p.outcstep + o, v.x);
        if (gy * 4 + 1 < p.outc_g)
            buffer_st1(top_blob_data, (co + 1) * p.outcstep + o, v.y);
        if (gy * 4 + 2 < p.outc_g)
            buffer_st1(top_blob_data, (co + 2) * p.outcstep + o, v.z);
        if (gy * 4 + 3 < p.outc_g)
            buffer_st1(top_blob_data, (co + 3) * p.outcstep + o, v.w);
    }
}
