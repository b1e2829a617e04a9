#version 450

// One step of Eltwise over blobs of one shape and packing: top = op(a * ca, b * cb), scalar
// by scalar (the lanes of a packed element are consecutive scalars, so elempack 1 and 4
// share it). Three or more inputs chain steps with a = top, ca = 1: every step reads and
// writes the same index only, so top may alias a.

layout (constant_id = 0) const int op_type = 0;

layout (local_size_x_id = 233, local_size_y_id = 234, local_size_z_id = 235) in;

layout (binding = 0) readonly buffer a_blob { sfp a_blob_data[]; };
layout (binding = 1) readonly buffer b_blob { sfp b_blob_data[]; };
layout (binding = 2) writeonly buffer top_blob { sfp top_blob_data[]; };

layout (push_constant) uniform parameter
{
    int size;
    int c;
    int cstep;
    float ca;
    float cb;
} p;

void main()
{
    const int gx = int(gl_GlobalInvocationID.x);
    const int gy = int(gl_GlobalInvocationID.y);

    if (gx >= p.size || gy >= p.c)
        return;

    const int i = gy * p.cstep + gx;
    // fp32 whatever afp is: chained sums keep their precision between steps only in top,
    // but each step's product and sum should not round twice
    const float x = float(buffer_ld1(a_blob_data, i));
    const float y = float(buffer_ld1(b_blob_data, i));
    float v;
    if (op_type == 0)
        v = x * y;
    else if (op_type == 1)
        v = x * p.ca + y * p.cb;
    else
        v = max(x, y);
    buffer_st1(top_blob_data, i, afp(v));
}
