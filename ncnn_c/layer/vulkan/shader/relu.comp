#version 450

// In-place ReLU / leaky ReLU over a blob seen as (w*h*d, c); cstep padding is skipped.

layout (constant_id = 0) const float slope = 0;

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
    afp v = buffer_ld1(bottom_top_blob_data, i);

    if (slope == 0)
        v = v < afp(0.f) ? afp(0.f) : v; // a NaN stays (GLSL leaves max() of a NaN undefined)
    else
        v = v < afp(0.f) ? v * afp(slope) : v;

    buffer_st1(bottom_top_blob_data, i, v);
}
