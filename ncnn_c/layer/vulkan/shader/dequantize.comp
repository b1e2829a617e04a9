#version 450

// Dequantize (requantize 0, no activation): y = x * scale_in + bias; Requantize (requantize
// 1): y = float2int8(activation(x * scale_in + bias) * scale_out); an int8 layer's last pass
// (vulkan/_int8.py): either, with its activation. x is int32, read from the
// bits of a 32-bit blob (the layers take fp32 elempack 1 blobs: no conversion touches the
// bits); y is fp32, Requantize's the int8 values widened. x * scale_in + bias is rounded
// once, as ncnn's x86 kernels (fmadd) and the CPU layer (_int8.dequantize) compute it. GLSL's
// fma() may be a multiply and an add (Vulkan's precision rule; lavapipe rounds twice) and
// float64 is not enabled, so the sum is formed from error-free transformations: the product
// as p + e exactly (Dekker's product over Veltkamp's 12-bit halves), p + b as sg + t exactly
// (Knuth's two-sum), then sg + (t + e). That is the correctly rounded result unless t + e
// itself rounds across a tie of the final rounding, which needs the exact sum within
// 2^-24 ulp of a tie.
//
// The blob is seen as (scalars per row, rows), the rows being ncnn's per-scale axis (see
// quantize.comp); each vector is per row (its *_per_row flag) or one value.

#include "vulkan_int8.h"

layout (constant_id = 0) const int requantize = 0;
layout (constant_id = 1) const int activation_type = 0;
layout (constant_id = 2) const float activation_param_0 = 0;
layout (constant_id = 3) const float activation_param_1 = 0;
// 1: x is an fp32 blob of int32 values (the exact sums of an int8 layer's float shader,
// vulkan/_int8.py), read through the same int binding
layout (constant_id = 4) const int float_input = 0;

layout (local_size_x_id = 233, local_size_y_id = 234, local_size_z_id = 235) in;

// bottom and top may be one buffer (an int8 layer's top, in place): no qualifiers
layout (binding = 0) buffer bottom_blob { int bottom_blob_data[]; };
layout (binding = 1) buffer top_blob { float top_blob_data[]; };
layout (binding = 2) readonly buffer scale_in_blob { float scale_in_data[]; };
layout (binding = 3) readonly buffer bias_blob { float bias_data[]; };
layout (binding = 4) readonly buffer scale_out_blob { float scale_out_data[]; };

layout (push_constant) uniform parameter
{
    int size;
    int rows;
    int stride;
    int scale_in_per_row;
    int bias_mode;  // 0 none, 1 one value, 2 per row
    int scale_out_per_row;
    int elempack;  // the row of scalar gx of row gy is gy * elempack + gx % elempack
    int col_mode;  // 1: the vectors run along the columns instead (a 2-D InnerProduct top): gx / elempack
    float out_mul;  // requantize: the int8 value times this (1, or 1 / top scale: _int8.py)
} p;

float fma_exact(float x, float s, float b)
{
    // Veltkamp: a = ah + al with 12-bit halves (4097 = 2^12 + 1)
    precise float cx = 4097.f * x;
    precise float xh = cx - (cx - x);
    precise float xl = x - xh;
    precise float cs = 4097.f * s;
    precise float sh = cs - (cs - s);
    precise float sl = s - sh;
    precise float p = x * s;
    precise float e = ((xh * sh - p) + xh * sl + xl * sh) + xl * sl;
    precise float sg = p + b;
    precise float bb = sg - p;
    precise float t = (p - (sg - bb)) + (b - bb);
    precise float r = sg + (t + e);
    return r;
}

// the activation in fp32, whatever afp is: the CPU layer activates in fp32
#define activation_afp float
#define activation_afpvec4 vec4
#include "vulkan_activation.h"

void main()
{
    const int gx = int(gl_GlobalInvocationID.x);
    const int gy = int(gl_GlobalInvocationID.y);

    if (gx >= p.size || gy >= p.rows)
        return;

    const int i = gy * p.stride + gx;
    const int row = p.col_mode == 1 ? gx / p.elempack : gy * p.elempack + gx % p.elempack;
    const float x = float_input == 1 ? intBitsToFloat(bottom_blob_data[i]) : float(bottom_blob_data[i]);
    const float s = scale_in_data[p.scale_in_per_row == 1 ? row : 0];
    const float b = p.bias_mode == 0 ? 0.f : bias_data[p.bias_mode == 2 ? row : 0];
    float v = fma_exact(x, s, b);

    v = activation(vec4(v)).x;

    if (requantize == 1)
    {
        precise float w = v * scale_out_data[p.scale_out_per_row == 1 ? row : 0];
        v = float2int8(w);
        if (p.out_mul != 1.f)
        {
            precise float d = v * p.out_mul;
            v = d;
        }
    }

    top_blob_data[i] = v;
}
