#version 450

// y = float2int8(x * scale) * out_mul over a blob seen as (scalars per row, rows): the rows
// are ncnn's per-scale axis (the rows of a 2-D blob, the channels of a 3-D / 4-D one; a 1-D
// blob is one row). A packed blob's lanes are consecutive scalars, so its row index is
// row * elempack + lane. per_row: scale_data[that index], else the push constant scale.
//
// Quantize runs it with out_mul 1 (the int8 values, widened by value into the blob's float
// storage); an int8 layer of a Vulkan net (vulkan/_int8.py) quantizes its bottom the same
// way, and requantizes its top with out_mul = 1 / top scale: the dequantized int8 value,
// from which the next layer's quantization (scale = this top scale) gives the int8 back.
// bottom and top may be one buffer (in place): no readonly / writeonly qualifiers.

#include "vulkan_int8.h"

layout (local_size_x_id = 233, local_size_y_id = 234, local_size_z_id = 235) in;

layout (binding = 0) buffer bottom_blob { sfp bottom_blob_data[]; };
layout (binding = 1) buffer top_blob { sfp top_blob_data[]; };
layout (binding = 2) readonly buffer scale_blob { float scale_data[]; };

layout (push_constant) uniform parameter
{
    int size;
    int rows;
    int stride;
    int elempack;
    int per_row;
    float scale;
    float out_mul;
} p;

void main()
{
    const int gx = int(gl_GlobalInvocationID.x);
    const int gy = int(gl_GlobalInvocationID.y);

    if (gx >= p.size || gy >= p.rows)
        return;

    const int i = gy * p.stride + gx;
    const float s = p.per_row == 1 ? scale_data[gy * p.elempack + gx % p.elempack] : p.scale;
    precise float v = float(buffer_ld1(bottom_blob_data, i)) * s;
    float q = float2int8(v);
    if (p.out_mul != 1.f)
    {
        precise float d = q * p.out_mul;
        q = d;
    }
    buffer_st1(top_blob_data, i, afp(q));
}
