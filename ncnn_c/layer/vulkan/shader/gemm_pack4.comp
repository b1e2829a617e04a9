#version 450

// Gemm with packing on: top = alpha * (A @ B + beta * C), every operand blob elempack 1
// or 4 and the top elempack 4 when its row count divides by 4. One invocation computes a
// 4 x 4 output tile (rows m0..m0+3 of A, columns n0..n0+3 of B), so each k step loads 4
// values of A and 4 of B for 16 multiply-adds; grid (ceil(N/4), ceil(M/4), 1).
//
// Every operand is read through one formula, whatever its packing or transpose: a stored
// matrix element (r, c) of a blob with elempack P lives at scalar
//     (r / P) * rs + (r % P) + c * P        (rs = row stride in packed elements x P)
// read through a scalar view of the buffer (aliased bindings: a packed element's lanes
// are consecutive scalars). For A (M x K) the stored row is m, or k when transposed; the
// layer passes, per operand, log2(P) (for "/ P" and "% P"), rs and P, and which logical
// index is the stored row. Constant operands are fp32 row-major (P = 1). C's
// broadcast forms use stride 0 along a broadcast axis. When a tile's 4 rows of A (or 4
// columns of B) are one packed element, a k step reads them as one vec4 instead. Products
// accumulate in fp32 whatever afp is. The top is written as vec4s when packed (its rows
// divide by 4, so a tile's 4 rows are one packed element), as scalars otherwise.

layout (constant_id = 0) const int constantA = 0;
layout (constant_id = 1) const int constantB = 0;
layout (constant_id = 2) const float alpha = 1.f;
layout (constant_id = 3) const float beta = 1.f;

layout (local_size_x_id = 233, local_size_y_id = 234, local_size_z_id = 235) in;

layout (binding = 0) readonly buffer a_blob { sfp a_blob_data[]; };
layout (binding = 1) readonly buffer b_blob { sfp b_blob_data[]; };
layout (binding = 2) readonly buffer c_blob { sfp c_blob_data[]; };
layout (binding = 3) writeonly buffer top_blob { sfp top_blob_data[]; };
// the same top as packed elements (aliased binding); without 16-bit storage the net keeps
// packed blobs fp32
#if NCNN_fp16_packed && !NCNN_fp16_storage
layout (binding = 3) writeonly buffer top_blob4 { vec4 top_blob4_data[]; };
#define top_st4(i, v) {top_blob4_data[i] = vec4(v);}
#else
layout (binding = 3) writeonly buffer top_blob4 { sfpvec4 top_blob4_data[]; };
#define top_st4(i, v) buffer_st4(top_blob4_data, i, afpvec4(v))
#endif
// A and B as packed elements (aliased bindings): when the 4 rows of a tile are one packed
// element (A packed along M, or B transposed and packed along N) a k step loads one vec4
#if NCNN_fp16_packed && !NCNN_fp16_storage
layout (binding = 0) readonly buffer a_blob4 { vec4 a_blob4_data[]; };
layout (binding = 1) readonly buffer b_blob4 { vec4 b_blob4_data[]; };
#define a_ld4(i) vec4(a_blob4_data[i])
#define b_ld4(i) vec4(b_blob4_data[i])
#else
layout (binding = 0) readonly buffer a_blob4 { sfpvec4 a_blob4_data[]; };
layout (binding = 1) readonly buffer b_blob4 { sfpvec4 b_blob4_data[]; };
#define a_ld4(i) vec4(buffer_ld4(a_blob4_data, i))
#define b_ld4(i) vec4(buffer_ld4(b_blob4_data, i))
#endif
layout (binding = 4) readonly buffer a_const { float a_const_data[]; };
layout (binding = 5) readonly buffer b_const { float b_const_data[]; };
layout (binding = 6) readonly buffer c_const { float c_const_data[]; };

layout (push_constant) uniform parameter
{
    int M;
    int N;
    int K;

    // per operand: 1 when its stored rows run along k (A transposed, B not), the shift and
    // mask of its elempack, its row stride (scalars per packed row) and its elempack
    int a_krows;
    int a_shift;
    int a_rs;
    int a_p;
    int b_krows;
    int b_shift;
    int b_rs;
    int b_p;

    // 0 no C, 1 C from the blob (times beta), 2 the constant C (beta applied); C's element
    // (m, n) is at (m' / P) * c_rs + (m' % P) + n * c_sn with m' = m, or 0 when C
    // broadcasts along M (c_rs = 0 then)
    int c_mode;
    int c_shift;
    int c_rs;
    int c_sn;

    // the top: rows are m (or n with output_transpose), row stride in scalars, elempack 1 or 4
    int o_transpose;
    int o_rs;
    int o_pack4;
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

// the offset a stored row index contributes
int row_part(int r, int shift, int rs)
{
    return (r >> shift) * rs + (r & ((1 << shift) - 1));
}

void main()
{
    const int n0 = int(gl_GlobalInvocationID.x) * 4;
    const int m0 = int(gl_GlobalInvocationID.y) * 4;

    if (n0 >= p.N || m0 >= p.M)
        return;

    // rows / columns past M / N repeat the last one: loads stay in bounds, stores are skipped
    const ivec4 m = min(ivec4(m0, m0 + 1, m0 + 2, m0 + 3), ivec4(p.M - 1));
    const ivec4 n = min(ivec4(n0, n0 + 1, n0 + 2, n0 + 3), ivec4(p.N - 1));

    // the m (n) part of each operand offset; the k part is added per step
    ivec4 am;
    ivec4 bn;
    for (int i = 0; i < 4; i++)
    {
        am[i] = p.a_krows == 1 ? m[i] * p.a_p : row_part(m[i], p.a_shift, p.a_rs);
        bn[i] = p.b_krows == 1 ? n[i] * p.b_p : row_part(n[i], p.b_shift, p.b_rs);
    }

    vec4 sum[4] = vec4[4](vec4(0.f), vec4(0.f), vec4(0.f), vec4(0.f));

    // the tile's 4 rows of A (columns of B) are one packed element: M (N) divides by 4 then
    const bool a_vec4 = constantA == 0 && p.a_p == 4 && p.a_krows == 0;
    const bool b_vec4 = constantB == 0 && p.b_p == 4 && p.b_krows == 0;

    // llvmpipe ends an invocation's loops after 65535 back-edges in all: 4 k per iteration
    int k = 0;
    for (; k < p.K; k += 4)
    {
        for (int j = 0; j < 4; j++)
        {
            // past K (the last iteration): clamp the loads, zero the contribution
            const int kk = min(k + j, p.K - 1);
            const int ak = p.a_krows == 1 ? row_part(kk, p.a_shift, p.a_rs) : kk * p.a_p;
            const int bk = p.b_krows == 1 ? row_part(kk, p.b_shift, p.b_rs) : kk * p.b_p;
            const vec4 av = a_vec4 ? a_ld4((am.x + ak) / 4)
                                   : vec4(load_a(am.x + ak), load_a(am.y + ak), load_a(am.z + ak), load_a(am.w + ak));
            const vec4 a = k + j < p.K ? av : vec4(0.f);
            const vec4 b = b_vec4 ? b_ld4((bn.x + bk) / 4)
                                  : vec4(load_b(bn.x + bk), load_b(bn.y + bk), load_b(bn.z + bk), load_b(bn.w + bk));
            sum[0] += a.x * b;
            sum[1] += a.y * b;
            sum[2] += a.z * b;
            sum[3] += a.w * b;
        }
    }

    if (p.c_mode != 0)
    {
        for (int i = 0; i < 4; i++)
        {
            const int cm = row_part(m[i], p.c_shift, p.c_rs);
            const ivec4 cn = n * p.c_sn;
            sum[i] += vec4(load_c(cm + cn.x), load_c(cm + cn.y), load_c(cm + cn.z), load_c(cm + cn.w));
        }
    }

    for (int i = 0; i < 4; i++)
        sum[i] *= alpha;

    if (p.o_transpose == 0)
    {
        // top rows are m: sum[i][j] is top (m0 + i, n0 + j)
        if (p.o_pack4 == 1)
        {
            // the 4 rows m0.. are one packed element: one vec4 per column
            for (int j = 0; j < 4; j++)
            {
                if (n0 + j < p.N)
                    top_st4((m0 / 4) * (p.o_rs / 4) + n0 + j, vec4(sum[0][j], sum[1][j], sum[2][j], sum[3][j]));
            }
            return;
        }
        for (int i = 0; i < 4; i++)
        {
            if (m0 + i >= p.M)
                break;
            for (int j = 0; j < 4; j++)
            {
                if (n0 + j < p.N)
                    buffer_st1(top_blob_data, (m0 + i) * p.o_rs + n0 + j, afp(sum[i][j]));
            }
        }
        return;
    }

    // top rows are n: sum[i][j] is top (n0 + j, m0 + i)
    if (p.o_pack4 == 1)
    {
        for (int i = 0; i < 4; i++)
        {
            if (m0 + i < p.M)
                top_st4((n0 / 4) * (p.o_rs / 4) + m0 + i, sum[i]);
        }
        return;
    }
    for (int j = 0; j < 4; j++)
    {
        if (n0 + j >= p.N)
            break;
        for (int i = 0; i < 4; i++)
        {
            if (m0 + i < p.M)
                buffer_st1(top_blob_data, (n0 + j) * p.o_rs + m0 + i, afp(sum[i][j]));
        }
    }
}
