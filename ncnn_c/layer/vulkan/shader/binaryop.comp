#version 450

// BinaryOp of two blobs of one shape and one packing: one invocation per scalar, the lanes of
// a packed element being consecutive scalars, so elempack 1 and 4 share this shader.

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
} p;

// op_type as BinaryOp numbers it; evaluated in fp32 whatever afp is (pow, atan2 and the
// rounding ops lose too much in fp16). The r-variants swap their operands.
float binary_op(float x, float y)
{
    if (op_type == 7 || op_type == 8 || op_type == 9 || op_type == 11 || op_type == 13
        || op_type == 16 || op_type == 18)
    {
        const float t = x;
        x = y;
        y = t;
    }
    if (op_type == 0) return x + y;
    if (op_type == 1 || op_type == 7) return x - y;
    if (op_type == 2) return x * y;
    if (op_type == 3 || op_type == 8) return x / y;
    if (op_type == 4) return max(x, y);
    if (op_type == 5) return min(x, y);
    if (op_type == 6 || op_type == 9) return pow(x, y);
    if (op_type == 10 || op_type == 11) return atan(x, y);
    // C fmod: the quotient truncated towards zero
    if (op_type == 12 || op_type == 13) return x - y * trunc(x / y);
    if (op_type == 14)
    {
        const float m = max(x, y);
        return m + log(1.f + exp(min(x, y) - m));
    }
    if (op_type == 15 || op_type == 16) return floor(x / y);
    // C remainder: the quotient rounded half to even
    return x - y * roundEven(x / y);
}

void main()
{
    const int gx = int(gl_GlobalInvocationID.x);
    const int gy = int(gl_GlobalInvocationID.y);

    if (gx >= p.size || gy >= p.c)
        return;

    const int i = gy * p.cstep + gx;
    const float x = float(buffer_ld1(a_blob_data, i));
    const float y = float(buffer_ld1(b_blob_data, i));
    buffer_st1(top_blob_data, i, afp(binary_op(x, y)));
}
