#version 450

// In-place per-channel affine map or PReLU (BatchNorm, Scale, Bias, PReLU) over an elempack-1
// blob (or a 1-D blob of any elempack: its lanes are consecutive scalars) seen as (size, c)
// scalars: one row per index of ncnn's channel axis (rows of 2-D, channels of 3-D/4-D),
// cstep padding skipped. Packed 2-D..4-D blobs use perchannel_pack4.comp.
//
// chmode picks the coefficient of a scalar: 0 its row's (the work group's y: one load shared
// by the group), 1 its own (a 1-D blob: every scalar a channel), 2 the one shared value.
// Keeping the index uniform where it can be matters on a CPU device (lavapipe), where every
// load at a per-invocation index is a gather. Coefficients are fp32; the math is fp32.

layout (constant_id = 0) const int prelu = 0;  // 0: x * mul + add, 1: x < 0 ? x * mul : x
layout (constant_id = 1) const int has_mul = 1;
layout (constant_id = 2) const int has_add = 0;
layout (constant_id = 3) const int chmode = 0;

layout (local_size_x_id = 233, local_size_y_id = 234, local_size_z_id = 235) in;

layout (binding = 0) buffer bottom_top_blob { sfp bottom_top_blob_data[]; };
layout (binding = 1) readonly buffer mul_blob { float mul_data[]; };
layout (binding = 2) readonly buffer add_blob { float add_data[]; };

layout (push_constant) uniform parameter
{
    int size;
    int c;
    int cstep;
} p;

void main()
{
    const int gx = int(gl_GlobalInvocationID.x);
    // the y extent of a work group is 1: its id is the row, uniform over the group
    const int gy = int(gl_WorkGroupID.y);

    if (gx >= p.size || gy >= p.c)
        return;

    const int i = gy * p.cstep + gx;
    const int ch = chmode == 0 ? gy : chmode == 1 ? gx : 0;
    float v = float(buffer_ld1(bottom_top_blob_data, i));

    if (prelu == 1)
    {
        v = v < 0.f ? v * mul_data[ch] : v;
    }
    else
    {
        if (has_mul == 1)
            v *= mul_data[ch];
        if (has_add == 1)
            v += add_data[ch];
    }

    // back through afp: with fp16 arithmetic the result is an fp16 value even in fp32 blobs
    buffer_st1(bottom_top_blob_data, i, afp(v));
}
