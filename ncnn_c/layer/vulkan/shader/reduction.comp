#version 450

// Reduction of an elempack 1 blob over any set of its axes. The input is seen as four slots
// (its numpy axes, padded with 1s in front). One invocation owns one output value: its kept
// coordinates come from the flat invocation index over the kept slot sizes (reduced slots
// count 1), and it loops over the reduced slot sizes (kept slots loop once), so any axes
// set needs no case analysis. Accumulation is fp32 whatever afp is.

layout (constant_id = 0) const int operation = 0;

layout (local_size_x_id = 233, local_size_y_id = 234, local_size_z_id = 235) in;

layout (binding = 0) readonly buffer bottom_blob { sfp bottom_blob_data[]; };
layout (binding = 1) writeonly buffer top_blob { sfp top_blob_data[]; };

layout (push_constant) uniform parameter
{
    int total;
    // kept slot sizes 1..3 (slot 0's is total / their product)
    int k1; int k2; int k3;
    // input strides per slot
    int s0; int s1; int s2; int s3;
    // reduced slot sizes (1 on kept slots)
    int r0; int r1; int r2; int r3;
    // output strides per slot (0 on reduced slots)
    int o0; int o1; int o2; int o3;
    float coeff;
} p;

float fold(float acc, float v)
{
    if (operation == 0 || operation == 3 || operation == 9)
        return acc + v;
    if (operation == 1 || operation == 7)
        return acc + abs(v);
    if (operation == 2 || operation == 8)
        return acc + v * v;
    if (operation == 4)
        return max(acc, v);
    if (operation == 5)
        return min(acc, v);
    if (operation == 6)
        return acc * v;
    return acc + exp(v);
}

void main()
{
    const int g = int(gl_GlobalInvocationID.x);
    if (g >= p.total)
        return;

    const int c3 = g % p.k3;
    const int t2 = g / p.k3;
    const int c2 = t2 % p.k2;
    const int t1 = t2 / p.k2;
    const int c1 = t1 % p.k1;
    const int c0 = t1 / p.k1;

    const int base = c0 * p.s0 + c1 * p.s1 + c2 * p.s2 + c3 * p.s3;

    float acc;
    if (operation == 4)
        acc = -3.402823466e+38f;
    else if (operation == 5)
        acc = 3.402823466e+38f;
    else if (operation == 6)
        acc = 1.f;
    else
        acc = 0.f;

    // llvmpipe ends an invocation's loops after 65535 back-edges in all (every loop counts
    // towards one limit), so the innermost loop takes 8 values per iteration
    for (int i0 = 0; i0 < p.r0; i0++)
    {
        for (int i1 = 0; i1 < p.r1; i1++)
        {
            for (int i2 = 0; i2 < p.r2; i2++)
            {
                const int row = base + i0 * p.s0 + i1 * p.s1 + i2 * p.s2;
                int i3 = 0;
                for (; i3 + 8 <= p.r3; i3 += 8)
                {
                    const int at = row + i3 * p.s3;
                    acc = fold(acc, float(buffer_ld1(bottom_blob_data, at)));
                    acc = fold(acc, float(buffer_ld1(bottom_blob_data, at + p.s3)));
                    acc = fold(acc, float(buffer_ld1(bottom_blob_data, at + 2 * p.s3)));
                    acc = fold(acc, float(buffer_ld1(bottom_blob_data, at + 3 * p.s3)));
                    acc = fold(acc, float(buffer_ld1(bottom_blob_data, at + 4 * p.s3)));
                    acc = fold(acc, float(buffer_ld1(bottom_blob_data, at + 5 * p.s3)));
                    acc = fold(acc, float(buffer_ld1(bottom_blob_data, at + 6 * p.s3)));
                    acc = fold(acc, float(buffer_ld1(bottom_blob_data, at + 7 * p.s3)));
                }
                for (; i3 < p.r3; i3++)
                    acc = fold(acc, float(buffer_ld1(bottom_blob_data, row + i3 * p.s3)));
            }
        }
    }

    if (operation == 9 || operation == 10)
        acc = log(acc);
    else if (operation == 8)
        // subnormal sums flush to zero before the root, as the CPU layer does
        acc = sqrt(acc < 1.175494351e-38f ? 0.f : acc);

    acc *= p.coeff;

    buffer_st1(top_blob_data, c0 * p.o0 + c1 * p.o1 + c2 * p.o2 + c3 * p.o3, afp(acc));
}
