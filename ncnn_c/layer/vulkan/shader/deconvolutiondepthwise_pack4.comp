#version 450

// Depthwise transposed convolution (DeconvolutionDepthWise with group == channels ==
// num_output) of an elempack 4 blob, as a gather: one invocation computes one output
// position of one packed channel (4 channels), over a (outw, outh, c/4) grid. Output (ox,
// oy) is full-output position (ox + crop_left, oy + crop_top); input (sx, sy) reaches it
// through tap (kx, ky) when sx * stride_w + kx * dilation_w equals it (likewise in y), so
// the crop, output_pad and output_w/output_h forms reduce to that offset and the output
// size (the layer takes them from the CPU class's geometry). Weights are [c/4][kh*kw]
// vec4s, the bias [c/4] vec4s, fp32 whatever the storage type. The top has the bottom's
// packing.

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

layout (local_size_x_id = 233, local_size_y_id = 234, local_size_z_id = 235) in;

#if NCNN_fp16_packed && !NCNN_fp16_storage
// without 16-bit storage the net keeps every blob fp32, packed ones included
layout (binding = 0) readonly buffer bottom_blob { vec4 bottom_blob_data[]; };
layout (binding = 1) writeonly buffer top_blob { vec4 top_blob_data[]; };
#define LOAD(i) afpvec4(bottom_blob_data[i])
#define STORE(i, v) {top_blob_data[i] = vec4(activation(v));}
#else
layout (binding = 0) readonly buffer bottom_blob { sfpvec4 bottom_blob_data[]; };
layout (binding = 1) writeonly buffer top_blob { sfpvec4 top_blob_data[]; };
#define LOAD(i) buffer_ld4(bottom_blob_data, i)
#define STORE(i, v) buffer_st4(top_blob_data, i, activation(v))
#endif
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
} p;

#include "vulkan_activation.h"


void main()
{
    const int gx = int(gl_GlobalInvocationID.x);
    const int gy = int(gl_GlobalInvocationID.y);
    const int gz = int(gl_GlobalInvocationID.z);

    if (gx >= p.outw || gy >= p.outh || gz >= p.c)
        return;

    const int fx = gx + p.crop_left;
    const int fy = gy + p.crop_top;

    afpvec4 sum = bias_term == 1 ? afpvec4(bias_data[gz]) : afpvec4(0.f);

    const int base = gz * p.cstep;
    const int wbase = gz * kernel_w * kernel_h;
    for (int ky = 0; ky < kernel_h; ky++)
    {
        const int ty = fy - ky * dilation_h;
        const int sy = ty / stride_h;
        if (ty < 0 || sy * stride_h != ty || sy >= p.h)
            continue;
        for (int kx = 0; kx < kernel_w; kx++)
        {
            const int tx = fx - kx * dilation_w;
            const int sx = tx / stride_w;
            if (tx < 0 || sx * stride_w != tx || sx >= p.w)
                continue;
            sum += LOAD(base + sy * p.w + sx) * afpvec4(weight_data[wbase + ky * kernel_w + kx]);
        }
    }

    STORE(gz * p.outcstep + gy * p.outw + gx, sum);
}
