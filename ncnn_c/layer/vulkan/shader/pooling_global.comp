#version 450

// Global max/avg pooling: one workgroup reduces one channel. Each invocation folds a
// strided slice, then the workgroup combines the partial results in shared memory.
// The host sets a power-of-two local size (x only, at most 256).

layout (constant_id = 0) const int pooling_type = 0;

layout (local_size_x_id = 233, local_size_y_id = 234, local_size_z_id = 235) in;

layout (binding = 0) readonly buffer bottom_blob { sfp bottom_blob_data[]; };
layout (binding = 1) writeonly buffer top_blob { sfp top_blob_data[]; };

layout (push_constant) uniform parameter
{
    int size;
    int c;
    int cstep;
} p;

shared afp partial[256];

afp combine(afp a, afp b)
{
    return pooling_type == 0 ? max(a, b) : a + b;
}

void main()
{
    const int lx = int(gl_LocalInvocationID.x);
    const int lsize = int(gl_WorkGroupSize.x);
    const int q = int(gl_WorkGroupID.y);

    // every invocation must reach the barriers, so out-of-range channels only skip work
    const bool valid = q < p.c;

    afp res = pooling_type == 0 ? afp(-3.402823466e+38f) : afp(0.f);
    if (valid)
    {
        const int v_offset = q * p.cstep;
        for (int i = lx; i < p.size; i += lsize)
        {
            res = combine(res, buffer_ld1(bottom_blob_data, v_offset + i));
        }
    }

    partial[lx] = res;
    memoryBarrierShared();
    barrier();

    for (int s = lsize / 2; s > 0; s >>= 1)
    {
        if (lx < s)
            partial[lx] = combine(partial[lx], partial[lx + s]);
        memoryBarrierShared();
        barrier();
    }

    if (lx == 0 && valid)
    {
        afp r = partial[0];
        if (pooling_type == 1)
            r = r / afp(p.size);
        buffer_st1(top_blob_data, q, r);
    }
}
