#version 450

// Convolution3D of an elempack 1 4-D bottom (c channels cstep apart, each d x h x w), and
// any grouped N-D convolution laid out the same way: one invocation computes one output
// position x 4 output channels of one group, over a (outw, outh * outd, ceil(outc_g/4) *
// group) grid. Weights are [group][ceil(outc_g/4)][inc_g][kd][kh][kw] vec4s (4 output
// channels of one tap, zero past outc_g) and the bias [group][ceil(outc_g/4)] vec4s, fp32
// whatever the storage type (vulkan.vec4_weights). Padding is virtual: taps outside the
// input read pad_value, so SAME pads cost nothing extra.

layout (constant_id = 0) const int kernel_w = 1;
layout (constant_id = 1) const int kernel_h = 1;
layout (constant_id = 2) const int kernel_d = 1;
layout (constant_id = 3) const int dilation_w = 1;
layout (constant_id = 4) const int dilation_h = 1;
layout (constant_id = 5) const int dilation_d = 1;
layout (constant_id = 6) const int stride_w = 1;
layout (constant_id = 7) const int stride_h = 1;
layout (constant_id = 8) const int stride_d = 1;
layout (constant_id = 9) const int bias_term = 0;
layout (constant_id = 10) const int activation_type = 0;
layout (constant_id = 11) const float activation_param_0 = 0;
layout (constant_id = 12) const float activation_param_1 = 0;

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
    int d;
    int cstep;

    int outw;
    int outh;
    int outd;
    int outcstep;

    int pad_left;
    int pad_top;
    int pad_front;
    float pad_value;

    int inc_g;
    int outc_g;
    int group;
} p;

#include "vulkan_activation.h"

void main()
{
    const int ox = int(gl_GlobalInvocationID.x);
    const int gy = int(gl_GlobalInvocationID.y);
    const int gz = int(gl_GlobalInvocationID.z);

    const int vec4s = (p.outc_g + 3) / 4;
    if (ox >= p.outw || gy >= p.outh * p.outd || gz >= vec4s * p.group)
        return;

    const int oz = gy / p.outh;
    const int oy = gy - oz * p.outh;
    const int g = gz / vec4s;
    const int block = gz - g * vec4s;

    // products in afp, the running sum in fp32 (docs/gpu-layers.md section 5)
    vec4 sum = bias_term == 1 ? bias_data[gz] : vec4(0.f);

    const int sx0 = ox * stride_w - p.pad_left;
    const int sy0 = oy * stride_h - p.pad_top;
    const int sz0 = oz * stride_d - p.pad_front;
    const afp pad_value = afp(p.pad_value);

    int wi = gz * p.inc_g * kernel_d * kernel_h * kernel_w;
    for (int q = 0; q < p.inc_g; q++)
    {
        const int base = (g * p.inc_g + q) * p.cstep;
        for (int kz = 0; kz < kernel_d; kz++)
        {
            const int sz = sz0 + kz * dilation_d;
            const bool z_inside = sz >= 0 && sz < p.d;
            for (int ky = 0; ky < kernel_h; ky++)
            {
                const int sy = sy0 + ky * dilation_h;
                const bool zy_inside = z_inside && sy >= 0 && sy < p.h;
                for (int kx = 0; kx < kernel_w; kx++)
                {
                    const int sx = sx0 + kx * dilation_w;
                    const bool inside = zy_inside && sx >= 0 && sx < p.w;
                    // a tap outside reads the channel's first cell (in bounds), then pad_value
                    const int i = inside ? base + (sz * p.h + sy) * p.w + sx : base;
                    const afp x = buffer_ld1(bottom_blob_data, i);
                    sum += vec4((inside ? x : pad_value) * afpvec4(weight_data[wi]));
                    wi++;
                }
            }
        }
    }

    const afpvec4 v = activation(afpvec4(sum));
    const int co = g * p.outc_g + block * 4;
    const int o = (oz * p.outh + oy) * p.outw + ox;
    if (block * 4 < p.outc_g)
        buffer_st1(top_blob_data, co * p.outcstep + o, v.x);
    if (block * 4 + 1 < p.outc_g)
        buffer_st1(top_blob_data, (co + 1) * p.outcstep + o, v.y);
    if (block * 4 + 2 < p.outc_g)
        buffer_st1(top_blob_data, (co + 2) * p.outcstep + o, v.z);
    if (block * 4 + 3 < p.outc_g)
        buffer_st1(top_blob_data, (co + 3) * p.outcstep + o, v.w);
}
