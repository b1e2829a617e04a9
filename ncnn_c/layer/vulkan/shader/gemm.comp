#version 450

// Gemm: top = alpha * (A @ B + beta * C). One invocation computes 4 neighbouring columns of
// one output row. A, B and C come either from blobs (sfp, elempack 1) or from constants
// uploaded once as fp32 (separate bindings: weights are never sfp); every operand is read
// through push-constant strides, so transposes, row strides (w or cstep) and C's broadcast
// (stride 0 along a broadcast axis) need no variant. A constant C is uploaded already
// multiplied by beta. Products accumulate in fp32 whatever afp is.
//
// gl_GlobalInvocationID.z picks one product of a batch (MultiHeadAttention's heads): each
// operand's index moves by its batch stride (0 for an operand shared by the whole batch).

layout (constant_id = 0) const int constantA = 0;
layout (constant_id = 1) const int constantB = 0;
layout (constant_id = 2) const float alpha = 1.f;
layout (constant_id = 3) const float beta = 1.f;

layout (local_size_x_id = 233, local_size_y_id = 234, local_size_z_id = 235) in;

layout (binding = 0) readonly buffer a_blob { sfp a_blob_data[]; };
layout (binding = 1) readonly buffer b_blob { sfp b_blob_data[]; };
layout (binding = 2) readonly buffer c_blob { sfp c_blob_data[]; };
layout (binding = 3) writeonly buffer top_blob { sfp top_blob_data[]; };
layout (binding = 4) readonly buffer a_const { float a_const_data[]; };
layout (binding = 5) readonly buffer b_const { float b_const_data[]; };
layout (binding = 6) readonly buffer c_const { float c_const_data[]; };

layout (push_constant) uniform parameter
{
    int M;
    int N;
    int K;
    int a_sm;
    int a_sk;
    int b_sk;
    int b_sn;
    // 0 no C, 1 C from the blob (times beta), 2 the constant C (beta applied)
    int c_mode;
    int c_sm;
    int c_sn;
    int o_sm;
    int o_sn;
    int a_sb;
    int b_sb;
    int c_sb;
    int o_sb;
} p;

float load_a(int i)
{
    return constantA == 1 ? a_const_data[i] : float(buffer_ld1(a_blob_data, i));
}

float load_b(int i)
{
    return constantB == 1 ? b_const_data[i] : float(buffer_ld1(b_blob_data, i));
}

float load_c(int i)
{
    return p.c_mode == 2 ? c_const_data[i] : beta * float(buffer_ld1(c_blob_data, i));
}

void main()
{
    const int n0 = int(gl_GlobalInvocationID.x) * 4;
    const int m = int(gl_GlobalInvocationID.y);
    const int z = int(gl_GlobalInvocationID.z);

    if (n0 >= p.N || m >= p.M)
        return;

    // columns past N repeat the last one: loads stay in bounds, their stores are skipped
    const ivec4 n = min(ivec4(n0, n0 + 1, n0 + 2, n0 + 3), ivec4(p.N - 1));
    const ivec4 bn = n * p.b_sn + z * p.b_sb;

    // llvmpipe ends an invocation's loops after 65535 back-edges in all: 4 k per iteration
    vec4 sum = vec4(0.f);
    int ai = m * p.a_sm + z * p.a_sb;
    int bk = 0;
    int k = 0;
    for (; k + 4 <= p.K; k += 4)
    {
        for (int j = 0; j < 4; j++)
        {
            const float a = load_a(ai);
            sum += a * vec4(load_b(bk + bn.x), load_b(bk + bn.y), load_b(bk + bn.z), load_b(bk + bn.w));
            ai += p.a_sk;
            bk += p.b_sk;
        }
    }
    for (; k < p.K; k++)
    {
        const float a = load_a(ai);
        sum += a * vec4(load_b(bk + bn.x), load_b(bk + bn.y), load_b(bk + bn.z), load_b(bk + bn.w));
        ai += p.a_sk;
        bk += p.b_sk;
    }

    if (p.c_mode != 0)
    {
        const int cm = m * p.c_sm + z * p.c_sb;
        const ivec4 cn = n * p.c_sn;
        sum += vec4(load_c(cm + cn.x), load_c(cm + cn.y), load_c(cm + cn.z), load_c(cm + cn.w));
    }

    sum *= alpha;

    const int om = m * p.o_sm + z * p.o_sb;
    buffer_st1(top_blob_data, om + n0 * p.o_sn, afp(sum.x));
    if (n0 + 1 < p.N)
        buffer_st1(top_blob_data, om + (n0 + 1) * p.o_sn, afp(sum.y));
    if (n0 + 2 < p.N)
        buffer_st1(top_blob_data, om + (n0 + 2) * p.o_sn, afp(sum.z));
    if (n0 + 3 < p.N)
        buffer_st1(top_blob_data, om + (n0 + 3) * p.o_sn, afp(sum.w));
}
