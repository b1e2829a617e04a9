#version 450

// Batched matrix product over elempack-1 blobs: top = alpha * (A @ B) (+ C). One invocation
// computes 4 neighbouring columns of one output row; grid (ceil(N/4), M, batch_c * batch_d).
//
// Every operand is read through push-constant strides (scalars): row and column strides of
// the matrix (a transposed B swaps them; a 1-D operand has stride 0 along its missing axis)
// and the strides of the two batch axes, c and d (0 where the operand broadcasts or lacks
// the axis). Two batch axes cover 4-D blobs, whose channel stride (cstep) is not d times
// the plane size. MatMul runs it with alpha 1 and no C; SDPA with its scale, the attention
// mask as C, and its heads as (group, head in group). Products accumulate in fp32
// whatever afp is.

layout (local_size_x_id = 233, local_size_y_id = 234, local_size_z_id = 235) in;

layout (binding = 0) readonly buffer a_blob { sfp a_blob_data[]; };
layout (binding = 1) readonly buffer b_blob { sfp b_blob_data[]; };
layout (binding = 2) readonly buffer c_blob { sfp c_blob_data[]; };
layout (binding = 3) writeonly buffer top_blob { sfp top_blob_data[]; };

layout (push_constant) uniform parameter
{
    int M;
    int N;
    int K;
    int batch_d;

    int a_sm;
    int a_sk;
    int a_sc;
    int a_sd;

    int b_sk;
    int b_sn;
    int b_sc;
    int b_sd;

    // 0: no C; 1: C added after alpha
    int c_mode;
    int c_sm;
    int c_sn;
    int c_sc;
    int c_sd;

    int o_sm;
    int o_sn;
    int o_sc;
    int o_sd;

    float alpha;
} p;

float load_b(int i)
{
    return float(buffer_ld1(b_blob_data, i));
}

void main()
{
    const int n0 = int(gl_GlobalInvocationID.x) * 4;
    const int m = int(gl_GlobalInvocationID.y);
    const int z = int(gl_GlobalInvocationID.z);

    if (n0 >= p.N || m >= p.M)
        return;

    const int zc = z / p.batch_d;
    const int zd = z - zc * p.batch_d;

    // columns past N repeat the last one: loads stay in bounds, their stores are skipped
    const ivec4 n = min(ivec4(n0, n0 + 1, n0 + 2, n0 + 3), ivec4(p.N - 1));
    const ivec4 bn = n * p.b_sn + zc * p.b_sc + zd * p.b_sd;

    // llvmpipe ends an invocation's loops after 65535 back-edges in all: 4 k per iteration
    vec4 sum = vec4(0.f);
    int ai = m * p.a_sm + zc * p.a_sc + zd * p.a_sd;
    int bk = 0;
    int k = 0;
    for (; k + 4 <= p.K; k += 4)
    {
        for (int j = 0; j < 4; j++)
        {
            const float a = float(buffer_ld1(a_blob_data, ai));
            sum += a * vec4(load_b(bk + bn.x), load_b(bk + bn.y), load_b(bk + bn.z), load_b(bk + bn.w));
            ai += p.a_sk;
            bk += p.b_sk;
        }
    }
    for (; k < p.K; k++)
    {
        const float a = float(buffer_ld1(a_blob_data, ai));
        sum += a * vec4(load_b(bk + bn.x), load_b(bk + bn.y), load_b(bk + bn.z), load_b(bk + bn.w));
        ai += p.a_sk;
        bk += p.b_sk;
    }

    sum *= p.alpha;

    if (p.c_mode == 1)
    {
        const int cm = m * p.c_sm + zc * p.c_sc + zd * p.c_sd;
        const ivec4 cn = cm + n * p.c_sn;
        sum += vec4(float(buffer_ld1(c_blob_data, cn.x)), float(buffer_ld1(c_blob_data, cn.y)),
                    float(buffer_ld1(c_blob_data, cn.z)), float(buffer_ld1(c_blob_data, cn.w)));
    }

    const int om = m * p.o_sm + zc * p.o_sc + zd * p.o_sd;
    buffer_st1(top_blob_data, om + n0 * p.o_sn, afp(sum.x));
    if (n0 + 1 < p.N)
        buffer_st1(top_blob_data, om + (n0 + 1) * p.o_sn, afp(sum.y));
    if (n0 + 2 < p.N)
        buffer_st1(top_blob_data, om + (n0 + 2) * p.o_sn, afp(sum.z));
    if (n0 + 3 < p.N)
        buffer_st1(top_blob_data, om + (n0 + 3) * p.o_sn, afp(sum.w));
}
