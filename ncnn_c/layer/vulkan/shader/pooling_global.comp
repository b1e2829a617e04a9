#version 450

// Global max/avg pooling: one invocation reduces one channel, reading it as vec4s
// (channels start 16-byte aligned) into 4 running partials combined at the end. No
// shared memory and no barriers: on CPU-like devices (lavapipe) a barrier is a
// context switch per SIMD batch, and a channel of a classifier head is short.

layout (constant_id = 0) const int pooling_type = 0;

layout (local_size_x_id = 233, local_size_y_id = 234, local_size_z_id = 235) in;

#include "vulkan_nan.h"

#if NCNN_fp16_packed && !NCNN_fp16_storage
// fp16_packed packs elempack 4 blobs only: an elempack 1 blob stays fp32
layout (binding = 0) readonly buffer bottom_blob { vec4 bottom_blob_data[]; };
#define bottom_ld4(i) vec4(bottom_blob_data[i])
#else
layout (binding = 0) readonly buffer bottom_blob { sfpvec4 bottom_blob_data[]; };
#define bottom_ld4(i) vec4(buffer_ld4(bottom_blob_data, i))
#endif
layout (binding = 1) writeonly buffer top_blob { sfp top_blob_data[]; };

layout (push_constant) uniform parameter
{
    int size;
    int c;
    int cstep;
} p;

void main()
{
    const int q = int(gl_GlobalInvocationID.x);
    if (q >= p.c)
        return;

    const int v_offset = q * p.cstep / 4;
    const int whole = p.size / 4;
    const int rest = p.size - whole * 4;
    // fp32 partials whatever afp is: a channel can hold thousands of values
    // a max starts from -inf (no border here: a channel of -inf gives -inf) and keeps a NaN
    vec4 acc = pooling_type == 0 ? vec4(uintBitsToFloat(0xff800000u)) : vec4(0.f);

    // 8 vec4 per iteration: llvmpipe (lavapipe) ends an invocation's loops after 65535
    // iterations in all, silently; unrolled, a channel of up to 2M values stays correct
    int i = 0;
    for (; i + 8 <= whole; i += 8)
    {
        vec4 v0 = bottom_ld4(v_offset + i);
        vec4 v1 = bottom_ld4(v_offset + i + 1);
        vec4 v2 = bottom_ld4(v_offset + i + 2);
        vec4 v3 = bottom_ld4(v_offset + i + 3);
        vec4 v4 = bottom_ld4(v_offset + i + 4);
        vec4 v5 = bottom_ld4(v_offset + i + 5);
        vec4 v6 = bottom_ld4(v_offset + i + 6);
        vec4 v7 = bottom_ld4(v_offset + i + 7);
        if (pooling_type == 0)
            acc = nan_max(acc, nan_max(nan_max(nan_max(v0, v1), nan_max(v2, v3)), nan_max(nan_max(v4, v5), nan_max(v6, v7))));
        else
            acc += ((v0 + v1) + (v2 + v3)) + ((v4 + v5) + (v6 + v7));
    }
    for (; i < whole; i++)
    {
        const vec4 v = bottom_ld4(v_offset + i);
        acc = pooling_type == 0 ? nan_max(acc, v) : acc + v;
    }

    // the cstep padding after the last element is not data: mask it off
    if (rest > 0)
    {
        vec4 v = bottom_ld4(v_offset + whole);
        const float neutral = pooling_type == 0 ? uintBitsToFloat(0xff800000u) : 0.f;
        v.y = rest > 1 ? v.y : neutral;
        v.z = rest > 2 ? v.z : neutral;
        v.w = neutral;
        acc = pooling_type == 0 ? nan_max(acc, v) : acc + v;
    }

    float r;
    if (pooling_type == 0)
    {
        r = nan_max(nan_max(acc.x, acc.y), nan_max(acc.z, acc.w));
    }
    else
    {
        r = (acc.x + acc.y + acc.z + acc.w) / float(p.size);
    }

    buffer_st1(top_blob_data, q, r);
}
