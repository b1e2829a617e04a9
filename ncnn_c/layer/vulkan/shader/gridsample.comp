#version 450

// GridSample of an elempack 1 3-D (dims3 = 0) or 4-D (dims3 = 1) bottom at the normalized
// locations of an elempack 1 grid blob: one invocation per output point over a (outw,
// outh * outd, 1) grid computes the point's location, taps and tap weights once and
// applies them to every channel. Coordinate (x, y[, z]) of output point (ox, oy, oz) sits
// at grid index coord * g_coord + ox * g_x + oy * g_y + oz * g_z (the layer sets the
// strides for the plain and the permute_fusion layouts).
//
// As ncnn's CPU form (and the CPU layer): locations are unnormalized in fp32, padded per
// padding_mode (zeros, border clamp, reflection), then sampled bilinearly / trilinearly,
// at the nearest cell (ties to even), or bicubically (A = -0.75, each of the 4 x 4 taps
// padded, 3-D only); taps outside the input read 0. Blobs are read and written as
// scalars straight into fp32 arithmetic whatever afp is (an fp16 location would move a
// sample by a fraction of a cell per thousand cells).

layout (constant_id = 0) const int sample_type = 1;
layout (constant_id = 1) const int padding_mode = 1;
layout (constant_id = 2) const int align_corner = 0;
layout (constant_id = 3) const int dims3 = 0;

layout (local_size_x_id = 233, local_size_y_id = 234, local_size_z_id = 235) in;

layout (binding = 0) readonly buffer bottom_blob { sfp bottom_blob_data[]; };
layout (binding = 1) readonly buffer grid_blob { sfp grid_blob_data[]; };
layout (binding = 2) writeonly buffer top_blob { sfp top_blob_data[]; };

layout (push_constant) uniform parameter
{
    int w;
    int h;
    int d;
    int c;
    int cstep;

    int outw;
    int outh;
    int outd;
    int outcstep;

    int g_coord;
    int g_x;
    int g_y;
    int g_z;
} p;

float unnormalize(float g, int n)
{
    precise float v;
    if (align_corner == 1)
        v = (g + 1.f) / 2.f * float(n - 1);
    else
        v = ((g + 1.f) * float(n) - 1.f) / 2.f;
    return v;
}

float reflect_coord(float x, float high)
{
    precise float v = high - abs(abs(x) - high);
    return v;
}

// ncnn's min_ps(n - 1, max_ps(s, 0)): a NaN takes the low end (GLSL's clamp of a NaN is undefined)
float clamp_coord(float s, int n)
{
    return s > 0.f ? min(s, float(n - 1)) : 0.f;
}

// ncnn's compute_coord: border clamps, reflection mirrors once at each end (then clamps)
float pad_coord(float s, int n)
{
    if (padding_mode == 2)
        return clamp_coord(s, n);
    if (padding_mode == 3)
    {
        if (align_corner == 1)
            return reflect_coord(s, float(n - 1));
        precise float v = reflect_coord(s + 0.5f, float(n)) - 0.5f;
        return clamp_coord(v, n);
    }
    return s;
}

float cubic_near(float v)
{
    const float a = -0.75f;
    precise float r = ((a + 2.f) * v - (a + 3.f)) * v * v + 1.f;
    return r;
}

float cubic_far(float v)
{
    const float a = -0.75f;
    precise float r = ((a * v - 5.f * a) * v + 8.f * a) * v - 4.f * a;
    return r;
}

float load_tap(int q, int z, int y, int x)
{
    if (x < 0 || x >= p.w || y < 0 || y >= p.h || z < 0 || z >= p.d)
        return 0.f;
    return float(bottom_blob_data[q * p.cstep + (z * p.h + y) * p.w + x]);
}

void main()
{
    const int ox = int(gl_GlobalInvocationID.x);
    const int gy = int(gl_GlobalInvocationID.y);

    if (ox >= p.outw || gy >= p.outh * p.outd)
        return;

    const int oz = gy / p.outh;
    const int oy = gy - oz * p.outh;
    const int gi = ox * p.g_x + oy * p.g_y + oz * p.g_z;
    const int o = gy * p.outw + ox;

    const float sx = unnormalize(float(grid_blob_data[gi]), p.w);
    const float sy = unnormalize(float(grid_blob_data[gi + p.g_coord]), p.h);
    const float sz = dims3 == 1 ? unnormalize(float(grid_blob_data[gi + 2 * p.g_coord]), p.d) : 0.f;

    if (sample_type == 3)
    {
        // bicubic (3-D bottoms): the 4 x 4 taps around the unpadded location, each padded
        const float x0 = floor(sx);
        const float y0 = floor(sy);
        const float tx = sx - x0;
        const float ty = sy - y0;
        const float cx[4] = float[4](cubic_far(tx + 1.f), cubic_near(tx), cubic_near(1.f - tx), cubic_far(1.f - tx + 1.f));
        const float cy[4] = float[4](cubic_far(ty + 1.f), cubic_near(ty), cubic_near(1.f - ty), cubic_far(1.f - ty + 1.f));
        int xs[4];
        int ys[4];
        for (int i = 0; i < 4; i++)
        {
            xs[i] = int(pad_coord(x0 + float(i - 1), p.w));
            ys[i] = int(pad_coord(y0 + float(i - 1), p.h));
        }
        for (int q = 0; q < p.c; q++)
        {
            float acc = 0.f;
            for (int i = 0; i < 4; i++)
            {
                float row = 0.f;
                for (int j = 0; j < 4; j++)
                    row += load_tap(q, 0, ys[i], xs[j]) * cx[j];
                acc += row * cy[i];
            }
            top_blob_data[q * p.outcstep + o] = sfp(acc);
        }
        return;
    }

    const float px = pad_coord(sx, p.w);
    const float py = pad_coord(sy, p.h);
    const float pz = dims3 == 1 ? pad_coord(sz, p.d) : 0.f;

    if (sample_type == 2)
    {
        const int x = int(roundEven(px));
        const int y = int(roundEven(py));
        const int z = int(roundEven(pz));
        for (int q = 0; q < p.c; q++)
            top_blob_data[q * p.outcstep + o] = sfp(load_tap(q, z, y, x));
        return;
    }

    // bilinear / trilinear
    const float fx = floor(px);
    const float fy = floor(py);
    const float fz = floor(pz);
    const int x0 = int(fx);
    const int y0 = int(fy);
    const int z0 = int(fz);
    const float ax = px - fx;
    const float ay = py - fy;
    const float az = pz - fz;
    for (int q = 0; q < p.c; q++)
    {
        float acc = 0.f;
        for (int k = 0; k < (dims3 == 1 ? 8 : 4); k++)
        {
            const int bx = k & 1;
            const int by = (k >> 1) & 1;
            const int bz = k >> 2;
            precise float weight = bz == 1 ? az : 1.f - az;
            if (dims3 == 0)
                weight = 1.f;
            weight = by == 1 ? weight * ay : weight * (1.f - ay);
            weight = bx == 1 ? weight * ax : weight * (1.f - ax);
            acc += load_tap(q, z0 + bz, y0 + by, x0 + bx) * weight;
        }
        top_blob_data[q * p.outcstep + o] = sfp(acc);
    }
}
