#version 450

// BinaryOp with broadcasting, any ranks and packings. Every blob is seen through four slots:
// slot 0 is the output's outer (packed) axis, slots 1..3 its inner axes, padded with 1s in
// front (4-D: c d h w; 3-D: c - h w; 2-D: h - - w; 1-D: w - - -). The host maps each input's
// axes onto those slots (sizes 1 where it broadcasts, strides in its packed elements), so one
// invocation per output scalar finds both operands with no case analysis:
//   scalar index = ((k0 / P) * stride0 + k1 * stride1 + k2 * stride2 + k3 * stride3) * P + k0 % P
// where k is the output coordinate clamped to the input's extent (0 on broadcast slots).
// An input's own packed axis is always on slot 0 (a 1-D input is passed as elempack 1: its
// scalars lie in the same order packed or not).

layout (constant_id = 0) const int op_type = 0;

layout (local_size_x_id = 233, local_size_y_id = 234, local_size_z_id = 235) in;

layout (binding = 0) readonly buffer a_blob { sfp a_blob_data[]; };
layout (binding = 1) readonly buffer b_blob { sfp b_blob_data[]; };
layout (binding = 2) writeonly buffer top_blob { sfp top_blob_data[]; };

layout (push_constant) uniform parameter
{
    // output: inner slot sizes, packed outer count, its stride (packed elements), elempack
    int n1;
    int n2;
    int n3;
    int outer;
    int ostride;
    int op;
    // per input: slot sizes, slot strides, elempack
    int sa0; int sa1; int sa2; int sa3;
    int ta0; int ta1; int ta2; int ta3;
    int ap;
    int sb0; int sb1; int sb2; int sb3;
    int tb0; int tb1; int tb2; int tb3;
    int bp;
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

int offset_of(ivec4 k, ivec4 size, ivec4 stride, int pk)
{
    const ivec4 kk = min(k, size - 1);
    return ((kk.x / pk) * stride.x + kk.y * stride.y + kk.z * stride.z + kk.w * stride.w) * pk + kk.x % pk;
}

void main()
{
    const int gx = int(gl_GlobalInvocationID.x);
    const int gy = int(gl_GlobalInvocationID.y);

    if (gx >= p.n1 * p.n2 * p.n3 * p.op || gy >= p.outer)
        return;

    const int i = gx / p.op;
    const int k3 = i % p.n3;
    const int t = i / p.n3;
    const ivec4 k = ivec4(gy * p.op + gx % p.op, t / p.n2, t % p.n2, k3);

    const float x = float(buffer_ld1(a_blob_data, offset_of(k, ivec4(p.sa0, p.sa1, p.sa2, p.sa3), ivec4(p.ta0, p.ta1, p.ta2, p.ta3), p.ap)));
    const float y = float(buffer_ld1(b_blob_data, offset_of(k, ivec4(p.sb0, p.sb1, p.sb2, p.sb3), ivec4(p.tb0, p.tb1, p.tb2, p.tb3), p.bp)));
    buffer_st1(top_blob_data, gy * p.ostride * p.op + gx, afp(binary_op(x, y)));
}
