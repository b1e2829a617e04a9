#version 450

// LRN, second pass, in place: y = x * (bias + alpha / n * sumsq) ^ -beta, with the window
// sums from lrn_square.comp (logical order; region 1 adds up its row sums along the column
// here) and the same shift/mask addressing of packed blobs. The power runs in fp32 whatever
// afp is.

layout (constant_id = 0) const float alpha_div_n = 1.f;
layout (constant_id = 1) const float bias = 1.f;
layout (constant_id = 2) const float beta = 0.75f;
layout (constant_id = 3) const int region_type = 0;
layout (constant_id = 4) const int local_size = 5;

layout (local_size_x_id = 233, local_size_y_id = 234, local_size_z_id = 235) in;

layout (binding = 0) buffer bottom_top_blob { sfp bottom_top_blob_data[]; };
layout (binding = 1) readonly buffer square_blob { float square_data[]; };

layout (push_constant) uniform parameter
{
    int w;
    int h;
    int c;
    int cshift;
    int cmul;
    int cmask;
    int yshift;
    int ymul;
    int ymask;
    int xmul;
} p;

void main()
{
    const int gx = int(gl_GlobalInvocationID.x);
    const int gy = int(gl_GlobalInvocationID.y);
    const int gz = int(gl_GlobalInvocationID.z);

    if (gx >= p.w || gy >= p.h || gz >= p.c)
        return;

    const int i = (gz >> p.cshift) * p.cmul + (gz & p.cmask) + (gy >> p.yshift) * p.ymul + (gy & p.ymask) + gx * p.xmul;
    float ss;
    if (region_type == 0)
    {
        ss = square_data[(gz * p.h + gy) * p.w + gx];
    }
    else
    {
        const int half_size = local_size / 2;
        const int y0 = max(gy - half_size, 0);
        const int y1 = min(gy - half_size + local_size, p.h);
        ss = 0.f;
        for (int y = y0; y < y1; y++)
            ss += square_data[(gz * p.h + y) * p.w + gx];
    }
    const float v = float(buffer_ld1(bottom_top_blob_data, i)) * pow(bias + alpha_div_n * ss, -beta);

    // back through afp: with fp16 arithmetic the result is an fp16 value even in fp32 blobs
    buffer_st1(bottom_top_blob_data, i, afp(v));
}
