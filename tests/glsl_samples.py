"""Small GLSL compute shaders the compiler and pipeline-cache tests share."""

SCALE = """#version 450
layout (constant_id = 0) const float scale = 1.0;
layout (local_size_x_id = 233, local_size_y_id = 234, local_size_z_id = 235) in;
layout (binding = 0) buffer data_blob { sfp data[]; };
layout (push_constant) uniform parameter { int n; } p;
void main()
{
    int i = int(gl_GlobalInvocationID.x);
    if (i >= p.n)
        return;
    buffer_st1(data, i, buffer_ld1(data, i) * afp(scale));
}
"""
