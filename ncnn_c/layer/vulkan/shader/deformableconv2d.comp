#version 450

// DeformableConv2D (v1 without a mask, v2 with one) of elempack 1 3-D blobs: one
// invocation computes one output position x 4 output channels over a (outw, outh,
// ceil(outc/4)) grid. Per kernel tap it reads the tap's offset (dy, dx) at its output
// position, computes the bilinear corners and weights of the shifted location once (in
// fp32: a location at or beyond (-1, size) gives 0, corners outside the input read 0),
// scales them by the mask, and applies them to every input channel. Weights are
// [ceil(outc/4)][inc][kh * kw] vec4s (4 output channels of one tap, zero past outc) and
// the bias [ceil(outc/4)] vec4s, fp32 whatever the storage type (vulkan.vec4_weights).

layout (constant_id = 0) const int kernel_w = 1;
layout (constant_id = 1) const int kernel_h = 1;
layout (constant_id = 2) const int dilation_w = 1;
layout (constant_id = 3) const int dilation_h = 1;
layout (constant_id = 4) const int stride_w = 1;
layout (constant_id = 5) const int stride_h = 1;
layout (constant_id = 6) const int bias_term = 0;
layout (constant_id = 7) const int has_mask = 0;
layout (constant_id = 8) const int activation_type = 0;
layout (constant_id = 9) const float activation_param_0 = 0;
layout (constant_id = 10) const float activation_param_1 = 0;

layout (local_size_x_id = 233, local_size_y_id = 234, local_size_z_id = 235) in;

layout (binding = 0) readonly buffer bottom_blob { sfp bottom_blob_data[]; };
layout (binding = 1) readonly buffer offset_blob { sfp offset_blob_data[]; };
// bound to the offsets and never read when has_mask == 0
layout (binding = 2) readonly buffer mask_blob { sfp mask_blob_data[]; };
layout (binding = 3) writeonly buffer top_blob { sfp top_blob_data[]; };
layout (binding = 4) readonly buffer weight_blob { vec4 weight_data[]; };
// bound to the weights and never read when bias_term == 0
layout (binding = 5) readonly buffer bias_blob { vec4 bias_data[]; };

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

    int offset_cstep;
    int mask_cstep;
    int pad_left;
    int pad_top;
} p;

#include "vulkan_activation.h"

void main()
{
    const int ox = int(gl_GlobalInvocationID.x);
    const int oy = int(gl_GlobalInvocationID.y);
    const int gz = int(gl_GlobalInvocationID.z);

    if (ox >= p.outw || oy >= p.outh || gz * 4 >= p.outc)
        return;

    vec4 sum = bias_term == 1 ? bias_data[gz] : vec4(0.f);

    const int maxk = kernel_w * kernel_h;
    const int o = oy * p.outw + ox;
    const int wbase = gz * p.c * maxk;
    for (int ky = 0; ky < kernel_h; ky++)
    {
        for (int kx = 0; kx < kernel_w; kx++)
        {
            const int k = ky * kernel_w + kx;
            const float dy = float(buffer_ld1(offset_blob_data, (2 * k) * p.offset_cstep + o));
            const float dx = float(buffer_ld1(offset_blob_data, (2 * k + 1) * p.offset_cstep + o));
            const float y = float(oy * stride_h - p.pad_top + ky * dilation_h) + dy;
            const float x = float(ox * stride_w - p.pad_left + kx * dilation_w) + dx;
            if (!(y > -1.f && x > -1.f && y < float(p.h) && x < float(p.w)))
                continue;
            const float y0f = floor(y);
            const float x0f = floor(x);
            const float ly = y - y0f;
            const float lx = x - x0f;
            const float hy = 1.f - ly;
            const float hx = 1.f - lx;
            const int y0 = int(y0f);
            const int x0 = int(x0f);
            const bool y0in = y0 >= 0;
            const bool y1in = y0 + 1 < p.h;
            const bool x0in = x0 >= 0;
            const bool x1in = x0 + 1 < p.w;
            const float m = has_mask == 1 ? float(buffer_ld1(mask_blob_data, k * p.mask_cstep + o)) : 1.f;
            // corner weights (0 for a corner outside), the mask folded in
            const vec4 cw = vec4(y0in && x0in ? hy * hx : 0.f, y0in && x1in ? hy * lx : 0.f,
                                 y1in && x0in ? ly * hx : 0.f, y1in && x1in ? ly * lx : 0.f) * m;
            // corners clamped into the input; their weight is 0 where that moved them
            const int ya = clamp(y0, 0, p.h - 1) * p.w;
            const int yb = clamp(y0 + 1, 0, p.h - 1) * p.w;
            const int xa = clamp(x0, 0, p.w - 1);
            const int xb = clamp(x0 + 1, 0, p.w - 1);
            int v = 0;
            int wi = wbase + k;
            for (int q = 0; q < p.c; q++)
            {
                const vec4 corners = vec4(
                    float(buffer_ld1(bottom_blob_data, v + ya + xa)), float(buffer_ld1(bottom_blob_data, v + ya + xb)),
                    float(buffer_ld1(bottom_blob_data, v + yb + xa)), float(buffer_ld1(bottom_blob_data, v + yb + xb)));
                sum += dot(corners, cw) * weight_data[wi];
                v += p.cstep;
                wi += maxk;
            }
        }
    }

    const afpvec4 r = activation(afpvec4(sum));
    const int co = gz * 4;
    buffer_st1(top_blob_data, co * p.outcstep + o, r.x);
    if (co + 1 < p.outc)
        buffer_st1(top_blob_data, (co + 1) * p.outcstep + o, r.y);
    if (co + 2 < p.outc)
        buffer_st1(top_blob_data, (co + 2) * p.outcstep + o, r.z);
    if (co + 3 < p.outc)
        buffer_st1(top_blob_data, (co + 3) * p.outcstep + o, r.w);
}
