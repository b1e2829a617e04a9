#version 450

// InnerProduct as a GEMV split over K, for GPUs: innerproduct.comp gives each invocation 4
// outputs and walks all num_input values alone, so a 25088 -> 4096 layer (VGG16's fc6) runs
// 1024 invocations of 25088 serial steps and leaves a big GPU idle. Here a work group of
// (lanes_g x lanes_k) invocations computes lanes_g output vec4s: invocation (x, y) sums the
// inputs k = y, y + lanes_k, ... for output vec4 g0 + x, so the lanes_g invocations of one
// k read lanes_g neighbouring weight vec4s (the weight layout [num_input][groups][4] is
// innerproduct.comp's), and the lanes_k partial sums meet in shared memory. Sums are fp32.
// Only the 1-row form (not batched); the input walk is innerproduct.comp's (units of
// `size` values, unit u at (u / pk) * ustride * pk + u % pk, values pk apart).

layout (constant_id = 0) const int bias_term = 0;
layout (constant_id = 1) const int activation_type = 0;
layout (constant_id = 2) const float activation_param_0 = 0;
layout (constant_id = 3) const float activation_param_1 = 0;
// 1: the weights were uploaded as halves (fp16 holds every one exactly): half the bytes
layout (constant_id = 4) const int weight_fp16 = 0;

// the local size is (lanes_g, lanes_k, 1)
layout (constant_id = 5) const int lanes_g = 8;
layout (constant_id = 6) const int lanes_k = 32;

layout (local_size_x_id = 233, local_size_y_id = 234, local_size_z_id = 235) in;

layout (binding = 0) readonly buffer bottom_blob { sfp bottom_blob_data[]; };
layout (binding = 1) writeonly buffer top_blob { sfp top_blob_data[]; };
layout (binding = 2) readonly buffer weight_blob { vec4 weight_data[]; };
layout (binding = 2) readonly buffer weight_blob_h { uvec2 weight_data_h[]; };
layout (binding = 3) readonly buffer bias_blob { vec4 bias_data[]; };

layout (push_constant) uniform parameter
{
    int units;
    int size;
    int ustride;
    int pk;
    int rows;
    int num_output;
    int opk;
    // 1: the row is the input unit (batched 2-D form); 0: every unit feeds every row
    int batched;
} p;

vec4 weight(int i)
{
    if (weight_fp16 == 1)
    {
        const uvec2 h = weight_data_h[i];
        return vec4(unpackHalf2x16(h.x), unpackHalf2x16(h.y));
    }
    return weight_data[i];
}

// the activation runs in fp32, as the accumulation
#define activation_afp float
#define activation_afpvec4 vec4
#include "vulkan_activation.h"

shared vec4 partial[lanes_k][lanes_g];

void main()
{
    const int lx = int(gl_LocalInvocationID.x);
    const int ly = int(gl_LocalInvocationID.y);
    const int g = int(gl_WorkGroupID.x) * lanes_g + lx;
    const int groups = (p.num_output + 3) / 4;
    const int total = p.units * p.size;

    vec4 sum = vec4(0.f);
    if (g < groups)
    {
        int k = ly;
        // llvmpipe ends an invocation's loops after 65535 back-edges: 4 values per step
        for (; k + 3 * lanes_k < total; k += 4 * lanes_k)
        {
            for (int j = 0; j < 4; j++)
            {
                const int kk = k + j * lanes_k;
                const int u = kk / p.size;
                const int b = (u / p.pk) * p.ustride * p.pk + u % p.pk + (kk - u * p.size) * p.pk;
                sum += float(buffer_ld1(bottom_blob_data, b)) * weight(kk * groups + g);
            }
        }
        for (; k < total; k += lanes_k)
        {
            const int u = k / p.size;
            const int b = (u / p.pk) * p.ustride * p.pk + u % p.pk + (k - u * p.size) * p.pk;
            sum += float(buffer_ld1(bottom_blob_data, b)) * weight(k * groups + g);
        }
    }
    partial[ly][lx] = sum;
    barrier();
    for (int s = lanes_k / 2; s > 0; s /= 2)
    {
        if (ly < s)
            partial[ly][lx] += partial[ly + s][lx];
        barrier();
    }
    if (ly != 0 || g >= groups)
        return;

    sum = partial[0][lx];
    if (bias_term == 1)
        sum += bias_data[g];
    sum = activation(sum);

    const int o = g * 4;
    buffer_st1(top_blob_data, o, afp(sum.x));
    if (o + 1 < p.num_output)
        buffer_st1(top_blob_data, o + 1, afp(sum.y));
    if (o + 2 < p.num_output)
        buffer_st1(top_blob_data, o + 2, afp(sum.z));
    if (o + 3 < p.num_output)
        buffer_st1(top_blob_data, o + 3, afp(sum.w));
}
