#version 450

// Copy a whole blob into a region of a larger one, offset along any of x, y, d and c.
// Concat records one such dispatch per input; crop/slice-style layers can reuse it.

layout (local_size_x_id = 233, local_size_y_id = 234, local_size_z_id = 235) in;

layout (binding = 0) readonly buffer bottom_blob { sfp bottom_blob_data[]; };
layout (binding = 1) writeonly buffer top_blob { sfp top_blob_data[]; };

layout (push_constant) uniform parameter
{
    int w;
    int h;
    int d;
    int c;
    int cstep;

    int outw;
    int outh;
    int outcstep;

    int offset_x;
    int offset_y;
    int offset_d;
    int offset_c;
} p;

void main()
{
    const int gx = int(gl_GlobalInvocationID.x);
    const int gy = int(gl_GlobalInvocationID.y);
    const int gz = int(gl_GlobalInvocationID.z);

    // grid is (w, h * d, c): within one channel the d and h planes are contiguous
    if (gx >= p.w || gy >= p.h * p.d || gz >= p.c)
        return;

    const int y = gy % p.h;
    const int z = gy / p.h;

    const int gi = gz * p.cstep + gy * p.w + gx;
    const int oi = (gz + p.offset_c) * p.outcstep + ((z + p.offset_d) * p.outh + y + p.offset_y) * p.outw + gx + p.offset_x;

    buffer_cp1(top_blob_data, oi, bottom_blob_data, gi);
}
