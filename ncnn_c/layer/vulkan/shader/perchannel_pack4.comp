#version 450

// perchannel.comp for elempack-4 blobs of 2-D..4-D: one invocation per packed element, whose
// four lanes are four consecutive channels of the work group's packed row; the coefficients
// are read as one vec4 per row (the arrays are zero-padded to a multiple of 4), uniform
// over the group. chmode 2: one shared value.

layout (constant_id = 0) const int prelu = 0;
layout (constant_id = 1) const int has_mul = 1;
layout (constant_id = 2) const int has_add = 0;
layout (constant_id = 3) const int chmode = 0;

layout (local_size_x_id = 233, local_size_y_id = 234, local_size_z_id = 235) in;

#if NCNN_fp16_packed && !NCNN_fp16_storage
// without 16-bit storage a packed blob stays fp32
layout (binding = 0) buffer bottom_top_blob { vec4 bottom_top_blob_data[]; };
#define blob_ld4(i) bottom_top_blob_data[i]
#define blob_st4(i, v) bottom_top_blob_data[i] = vec4(afpvec4(v))
#else
layout (binding = 0) buffer bottom_top_blob { sfpvec4 bottom_top_blob_data[]; };
#define blob_ld4(i) vec4(buffer_ld4(bottom_top_blob_data, i))
#define blob_st4(i, v) buffer_st4(bottom_top_blob_data, i, afpvec4(v))
#endif
layout (binding = 1) readonly buffer mul_blob { vec4 mul_data[]; };
layout (binding = 2) readonly buffer add_blob { vec4 add_data[]; };

layout (push_constant) uniform parameter
{
    int size;
    int c;
    int cstep;
} p;

void main()
{
    const int gx = int(gl_GlobalInvocationID.x);
    const int gy = int(gl_WorkGroupID.y);

    if (gx >= p.size || gy >= p.c)
        return;

    const int i = gy * p.cstep + gx;
    vec4 v = blob_ld4(i);

    if (prelu == 1)
    {
        const vec4 s = chmode == 2 ? vec4(mul_data[0].x) : mul_data[gy];
        v = mix(v, v * s, lessThan(v, vec4(0.f)));
    }
    else
    {
        if (has_mul == 1)
            v *= chmode == 2 ? vec4(mul_data[0].x) : mul_data[gy];
        if (has_add == 1)
            v += chmode == 2 ? vec4(add_data[0].x) : add_data[gy];
    }

    blob_st4(i, v);
}
