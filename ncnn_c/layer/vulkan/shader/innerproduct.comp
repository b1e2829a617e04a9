#version 450

// InnerProduct: one invocation computes 4 outputs (one weight vec4 per input value) of one
// row. The weights are uploaded as [num_input][ceil(num_output / 4)][4] (zero-filled past
// num_output), so neighbouring invocations read neighbouring vec4s for the same input;
// as pairs of halves (uvec2) when fp16 holds every weight exactly (a model stored as fp16).
//
// The input, of any rank and packing, is walked as outer units (channels, or rows of a 2-D
// blob; in the batched form the unit is the invocation's row), each `size` values long:
// unit u starts at scalar (u / pk) * ustride * pk + u % pk and its values step by pk.
// The output is (rows, num_output) with elempack opk along rows (1-D: rows = 1, opk = 1).
// Dot products run in fp32 whatever afp is.

layout (constant_id = 0) const int bias_term = 0;
layout (constant_id = 1) const int activation_type = 0;
layout (constant_id = 2) const float activation_param_0 = 0;
layout (constant_id = 3) const float activation_param_1 = 0;
// 1: the weights were uploaded as halves (fp16 holds every one exactly): half the bytes
layout (constant_id = 4) const int weight_fp16 = 0;

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

void main()
{
    const int g = int(gl_GlobalInvocationID.x);
    const int r = int(gl_GlobalInvocationID.y);
    const int groups = (p.num_output + 3) / 4;

    if (g >= groups || r >= p.rows)
        return;

    vec4 sum = bias_term == 1 ? bias_data[g] : vec4(0.f);

    // llvmpipe ends an invocation's loops after 65535 back-edges in all (every loop counts
    // towards one limit), so the walk takes 8 values per iteration: 500k inputs fit
    int k = 0;
    for (int u = 0; u < p.units; u++)
    {
        const int unit = p.batched == 1 ? r : u;
        const int base = (unit / p.pk) * p.ustride * p.pk + unit % p.pk;
        int i = 0;
        for (; i + 8 <= p.size; i += 8)
        {
            const int b = base + i * p.pk;
            const int w = k * groups + g;
            sum += float(buffer_ld1(bottom_blob_data, b)) * weight(w);
            sum += float(buffer_ld1(bottom_blob_data, b + p.pk)) * weight(w + groups);
            sum += float(buffer_ld1(bottom_blob_data, b + 2 * p.pk)) * weight(w + 2 * groups);
            sum += float(buffer_ld1(bottom_blob_data, b + 3 * p.pk)) * weight(w + 3 * groups);
            sum += float(buffer_ld1(bottom_blob_data, b + 4 * p.pk)) * weight(w + 4 * groups);
            sum += float(buffer_ld1(bottom_blob_data, b + 5 * p.pk)) * weight(w + 5 * groups);
            sum += float(buffer_ld1(bottom_blob_data, b + 6 * p.pk)) * weight(w + 6 * groups);
            sum += float(buffer_ld1(bottom_blob_data, b + 7 * p.pk)) * weight(w + 7 * groups);
            k += 8;
        }
        for (; i < p.size; i++)
        {
            sum += float(buffer_ld1(bottom_blob_data, base + i * p.pk)) * weight(k * groups + g);
            k++;
        }
    }

    sum = activation(sum);

    const int obase = (r / p.opk) * p.num_output * p.opk + r % p.opk;
    const int o = g * 4;
    buffer_st1(top_blob_data, obase + o * p.opk, afp(sum.x));
    if (o + 1 < p.num_output)
        buffer_st1(top_blob_data, obase + (o + 1) * p.opk, afp(sum.y));
    if (o + 2 < p.num_output)
        buffer_st1(top_blob_data, obase + (o + 2) * p.opk, afp(sum.z));
    if (o + 3 < p.num_output)
        buffer_st1(top_blob_data, obase + (o + 3) * p.opk, afp(sum.w));
}
