#version 450

// In-place |x| over a blob seen as (scalars per channel, channels); cstep padding is
// skipped. Packed blobs need no variant: the lanes of a packed element are consecutive
// scalars, so the host passes w*h*d*elempack and cstep*elempack.

layout (local_size_x_id = 233, local_size_y_id = 234, local_size_z_id = 235) in;

layout (binding = 0) buffer bottom_top_blob { sfp bottom_top_blob_data[]; };

layout (push_constant) uniform parameter
{
    int size;
    int c;
    int cstep;
} p;

void main()
{
    const int gx = int(gl_GlobalInvocationID.x);
    const int gy = int(gl_GlobalInvocationID.y);

    if (gx >= p.size || gy >= p.c)
        return;

    const int i = gy * p.cstep + gx;
    buffer_st1(bottom_top_blob_data, i, abs(buffer_ld1(bottom_top_blob_data, i)));
}
