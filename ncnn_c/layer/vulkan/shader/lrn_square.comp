#version 450

// LRN, first pass: window sums of squares into an fp32 scratch buffer in logical (c, h, w)
// order. region 0 sums local_size channels starting at ch - local_size/2; region 1 sums the
// row part of the local_size x local_size spatial window placed the same way (values outside
// the blob count as 0), lrn_norm.comp then sums those along the columns: 2 * local_size loads
// a value instead of local_size^2. Sums are fp32 whatever afp is.
//
// Logical (ch, y, x) sits at scalar (ch >> cshift) * cmul + (ch & cmask)
// + (y >> yshift) * ymul + (y & ymask) + x * xmul: packed channels (3-D), packed rows (2-D)
// and a 1-D blob's consecutive lanes all reduce to shifts and masks.

layout (constant_id = 0) const int region_type = 0;
layout (constant_id = 1) const int local_size = 5;

layout (local_size_x_id = 233, local_size_y_id = 234, local_size_z_id = 235) in;

layout (binding = 0) readonly buffer bottom_blob { sfp bottom_blob_data[]; };
layout (binding = 1) writeonly buffer square_blob { float square_data[]; };

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

float sq(int ch, int y, int x)
{
    const int i = (ch >> p.cshift) * p.cmul + (ch & p.cmask) + (y >> p.yshift) * p.ymul + (y & p.ymask) + x * p.xmul;
    const float v = float(buffer_ld1(bottom_blob_data, i));
    return v * v;
}

void main()
{
    const int gx = int(gl_GlobalInvocationID.x);
    const int gy = int(gl_GlobalInvocationID.y);
    const int gz = int(gl_GlobalInvocationID.z);

    if (gx >= p.w || gy >= p.h || gz >= p.c)
        return;

    const int half_size = local_size / 2;
    float ss = 0.f;

    if (region_type == 0)
    {
        const int c0 = max(gz - half_size, 0);
        const int c1 = min(gz - half_size + local_size, p.c);
        for (int ch = c0; ch < c1; ch++)
            ss += sq(ch, gy, gx);
    }
    else
    {
        const int x0 = max(gx - half_size, 0);
        const int x1 = min(gx - half_size + local_size, p.w);
        for (int x = x0; x < x1; x++)
            ss += sq(gz, gy, x);
    }

    square_data[(gz * p.h + gy) * p.w + gx] = ss;
}
