#version 450

// Interp: each output value is a weighted sum of taps rows of taps input values; the host
// builds the tap tables (clamped source indices, then weights, per output x and y) with
// the CPU layer's own coefficient code, so sources and weights match it exactly, and sums
// in its order (along rows first). A 2-D blob keeps its rows (keep_rows); a 1-D input
// spreads value c over output channel c (spread). Interpolation never mixes channels (or a
// 2-D blob's rows), so with both blobs packed whole packed elements are summed.
// The blob layout conventions of the data-movement shaders are in _remap.py: a blob of any
// rank is described by strides and its packed coordinate; in_pack / out_pack are
// specialization constants, so a pipeline exists per packing pair and lane arithmetic is
// shifts.

layout (constant_id = 0) const int in_pack = 1;
layout (constant_id = 1) const int out_pack = 1;
layout (constant_id = 2) const int taps = 1;

layout (local_size_x_id = 233, local_size_y_id = 234, local_size_z_id = 235) in;

#if NCNN_fp16_packed && !NCNN_fp16_storage
// without 16-bit storage the net keeps every blob fp32, packed ones included
#define bfpvec4 vec4
#else
#define bfpvec4 sfpvec4
#endif

// each blob bound twice: as scalars (a packed element's lanes are consecutive scalars, and
// 16-bit storage allows whole loads and stores only) and as packed elements
layout (binding = 0) readonly buffer bottom_blob { sfp bottom_blob_data[]; };
layout (binding = 1) writeonly buffer top_blob { sfp top_blob_data[]; };
layout (binding = 0) readonly buffer bottom_blob_4 { bfpvec4 bottom_blob_data_4[]; };
layout (binding = 1) writeonly buffer top_blob_4 { bfpvec4 top_blob_data_4[]; };
layout (binding = 2) readonly buffer taps_table { float taps_data[]; };

layout (push_constant) uniform parameter
{
    // each blob: strides of x, y, z, c in packed elements and which coordinate is packed
    int in_sx;
    int in_sy;
    int in_sz;
    int in_sc;
    int in_axis;

    int out_sx;
    int out_sy;
    int out_sz;
    int out_sc;
    int out_axis;

    // the output's extents in packed elements; row > 0: a 1-D output laid over the grid's
    // x and y, x = gy * row + gx
    int outw;
    int outh;
    int outd;
    int outc;
    int row;

    // where the y table starts in taps_data
    int y_table;
    int keep_rows;
    int spread;
} p;

// scalar index of logical position pos (x, y, z, c) in the bottom
int in_index(ivec4 pos)
{
    const int o = pos[p.in_axis];
    pos[p.in_axis] = o / in_pack;
    return (pos.x * p.in_sx + pos.y * p.in_sy + pos.z * p.in_sz + pos.w * p.in_sc) * in_pack + o % in_pack;
}

// packed element index of logical position pos, whose packed coordinate is a lane 0
int in_element(ivec4 pos)
{
    pos[p.in_axis] /= in_pack;
    return pos.x * p.in_sx + pos.y * p.in_sy + pos.z * p.in_sz + pos.w * p.in_sc;
}

void main()
{
    int gx = int(gl_GlobalInvocationID.x);
    int gy = int(gl_GlobalInvocationID.y);
    const int gz = int(gl_GlobalInvocationID.z);
    if (p.row > 0)
    {
        gx += gy * p.row;
        gy = 0;
    }
    if (gx >= p.outw || gy >= p.outh * p.outd || gz >= p.outc)
        return;

    // one packed output element per invocation: its index, then the logical position of
    // its lane 0
    ivec4 pos = p.outd == 1 ? ivec4(gx, gy, 0, gz) : ivec4(gx, gy % p.outh, gy / p.outh, gz);
    const int oe = pos.x * p.out_sx + pos.y * p.out_sy + pos.z * p.out_sz + pos.w * p.out_sc;
    pos[p.out_axis] *= out_pack;

    if (p.spread == 1)
    {
        if (in_pack == 4 && out_pack == 4)
        {
            buffer_cp4(top_blob_data_4, oe, bottom_blob_data_4, pos.w / 4);
            return;
        }
        for (int l = 0; l < out_pack; l++)
            buffer_cp1(top_blob_data, oe * out_pack + l, bottom_blob_data, pos.w + l);
        return;
    }

    int sx[taps];
    float wx[taps];
    for (int t = 0; t < taps; t++)
    {
        sx[t] = int(taps_data[pos.x * taps * 2 + t]);
        wx[t] = taps_data[pos.x * taps * 2 + taps + t];
    }
    int sy[taps];
    float wy[taps];
    const int ny = p.keep_rows == 1 ? 1 : taps;
    for (int t = 0; t < taps; t++)
    {
        // a 2-D blob has no y table
        sy[t] = p.keep_rows == 1 ? 0 : int(taps_data[p.y_table + pos.y * taps * 2 + t]);
        wy[t] = p.keep_rows == 1 ? 1.f : taps_data[p.y_table + pos.y * taps * 2 + taps + t];
    }

    if (in_pack == 4 && out_pack == 4)
    {
        // a 2-D blob packs rows: the element row is the output's own
        const int base = p.keep_rows == 1 ? in_element(ivec4(0, pos.y, 0, 0)) : in_element(ivec4(0, 0, 0, pos.w));
        vec4 sum = vec4(0.f);
        for (int ty = 0; ty < ny; ty++)
        {
            const int rb = p.keep_rows == 1 ? base : base + sy[ty] * p.in_sy;
            vec4 row = vec4(bottom_blob_data_4[rb + sx[0]]) * wx[0];
            for (int tx = 1; tx < taps; tx++)
                row += vec4(bottom_blob_data_4[rb + sx[tx]]) * wx[tx];
            sum = p.keep_rows == 1 ? row : ty == 0 ? row * wy[0] : sum + row * wy[ty];
        }
        top_blob_data_4[oe] = bfpvec4(sum);
        return;
    }
    for (int l = 0; l < out_pack; l++)
    {
        ivec4 q = pos;
        q[p.out_axis] += l;
        float sum = 0.f;
        for (int ty = 0; ty < ny; ty++)
        {
            const int y = p.keep_rows == 1 ? q.y : sy[ty];
            float row = float(bottom_blob_data[in_index(ivec4(sx[0], y, 0, q.w))]) * wx[0];
            for (int tx = 1; tx < taps; tx++)
                row += float(bottom_blob_data[in_index(ivec4(sx[tx], y, 0, q.w))]) * wx[tx];
            sum = p.keep_rows == 1 ? row : ty == 0 ? row * wy[0] : sum + row * wy[ty];
        }
        buffer_st1(top_blob_data, oe * out_pack + l, afp(sum));
    }
}
