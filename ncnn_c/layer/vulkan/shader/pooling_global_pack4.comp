#version 450

// Global max/avg pooling of an elempack 4 blob: one invocation reduces one packed channel
// (4 channels) into fp32 partials, and writes one packed element of a 1-D elempack 4 blob.

layout (constant_id = 0) const int pooling_type = 0;

layout (local_size_x_id = 233, local_size_y_id = 234, local_size_z_id = 235) in;

#include "vulkan_nan.h"

#if NCNN_fp16_packed && !NCNN_fp16_storage
// without 16-bit storage the net keeps every blob fp32, packed ones included
layout (binding = 0) readonly buffer bottom_blob { vec4 bottom_blob_data[]; };
layout (binding = 1) writeonly buffer top_blob { vec4 top_blob_data[]; };
#define blob_ld4(buf, i) afpvec4(buf[i])
#define blob_st4(buf, i, v) {buf[i] = vec4(v);}
#else
layout (binding = 0) readonly buffer bottom_blob { sfpvec4 bottom_blob_data[]; };
layout (binding = 1) writeonly buffer top_blob { sfpvec4 top_blob_data[]; };
#define blob_ld4(buf, i) buffer_ld4(buf, i)
#define blob_st4(buf, i, v) buffer_st4(buf, i, v)
#endif

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

    const int v_offset = q * p.cstep;
    // fp32 partials whatever afp is: a channel can hold thousands of values
    // a max starts from -inf (no border here: a channel of -inf gives -inf) and keeps a NaN
    vec4 acc = pooling_type == 0 ? vec4(uintBitsToFloat(0xff800000u)) : vec4(0.f);
    // 8 elements per iteration: llvmpipe (lavapipe) ends an invocation's loops after 65535
    // iterations in all, silently; unrolled, a channel of up to 500k values stays correct
    int i = 0;
    for (; i + 8 <= p.size; i += 8)
    {
        vec4 v0 = vec4(blob_ld4(bottom_blob_data, v_offset + i));
        vec4 v1 = vec4(blob_ld4(bottom_blob_data, v_offset + i + 1));
        vec4 v2 = vec4(blob_ld4(bottom_blob_data, v_offset + i + 2));
        vec4 v3 = vec4(blob_ld4(bottom_blob_data, v_offset + i + 3));
        vec4 v4 = vec4(blob_ld4(bottom_blob_data, v_offset + i + 4));
        vec4 v5 = vec4(blob_ld4(bottom_blob_data, v_offset + i + 5));
        vec4 v6 = vec4(blob_ld4(bottom_blob_data, v_offset + i + 6));
        vec4 v7 = vec4(blob_ld4(bottom_blob_data, v_offset + i + 7));
        if (pooling_type == 0)
            acc = nan_max(acc, nan_max(nan_max(nan_max(v0, v1), nan_max(v2, v3)), nan_max(nan_max(v4, v5), nan_max(v6, v7))));
        else
            acc += ((v0 + v1) + (v2 + v3)) + ((v4 + v5) + (v6 + v7));
    }
    for (; i < p.size; i++)
    {
        const vec4 v = vec4(blob_ld4(bottom_blob_data, v_offset + i));
        acc = pooling_type == 0 ? nan_max(acc, v) : acc + v;
    }
    if (pooling_type == 1)
        acc = acc / float(p.size);

    blob_st4(top_blob_data, q, acc);
}
