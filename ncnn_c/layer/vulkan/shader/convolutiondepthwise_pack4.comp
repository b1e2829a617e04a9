#version 450

// Depthwise convolution of an elempack 4 blob: as convolutiondepthwise.comp, one
// invocation computing tile_w outputs along a row of one packed channel (4 channels),
// over a (ceil(outw/tile_w), outh, c/4) grid. Weights are [c/4][kh*kw] vec4s and the bias
// [c/4] vec4s, fp32 whatever the storage type.

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

    int pad_left;
    int pad_top;
    float pad_value;
} p;

// input positions one row of taps touches for a tile
const int window = (tile_w - 1) * stride_w + (kernel_w - 1) * dilation_w + 1;

#include "vulkan_activation.h"

#define TYPE afpvec4

void main()
{
    const int gx = int(gl_GlobalInvocationID.x);
    const int gy = int(gl_GlobalInvocationID.y);
    const int gz = int(gl_GlobalInvocationID.z);

    const int ox = gx * tile_w;
    if (ox >= p.outw || gy >= p.outh || gz >= p.c)
        return;

    // products in afp, the running sums in fp32 (docs/gpu-layers.md section 5)
    vec4 sum[tile_w];
    const vec4 b = bias_term == 1 ? bias_data[gz] : vec4(0.f);
    for (int i = 0; i < tile_w; i++)
        sum[i] = b;

    const int sx0 = ox * stride_w - p.pad_left;
    const int sy0 = gy * stride_h - p.pad_top;
    const TYPE pad_value = TYPE(p.pad_value);
    const int last = p.c * p.cstep - 1;

    bool x_inside[window];
    for (int e = 0; e < window; e++)
        x_inside[e] = sx0 + e >= 0 && sx0 + e < p.w;

    int wi = gz * kernel_w * kernel_h;
    for (int ky = 0; ky < kernel_h; ky++)
    {
        const int sy = sy0 + ky * dilation_h;
        const bool row_inside = sy >= 0 && sy < p.h;
        // a row outside reads row 0 (in bounds) and then pad_value
        const int start = gz * p.cstep + (row_inside ? sy : 0) * p.w + sx0;

        TYPE row[window];
        for (int e = 0; e < window; e++)
        {
            const TYPE x = LOAD(clamp(start + e, 0, last));
            row[e] = row_inside && x_inside[e] ? x : pad_value;
        }
        for (int kx = 0; kx < kernel_w; kx++)
        {
            const TYPE k = TYPE(weight_data[wi + kx]);
            for (int i = 0; i < tile_w; i++)
                sum[i] += vec4(row[i * stride_w + kx * dilation_w] * k);
        }
        wi += kernel_w;
    }

    const int i0 = gz * p.outcstep + gy * p.outw + ox;
    for (int i = 0; i < tile_w; i++)
    {
        if (ox + i < p.outw)
            STORE(i0 + i, afpvec4(sum[i]));
    }
}
