#version 450

// Padding: the input at an offset, borders filled per coordinate: a constant (or the output
// channel's own value from the per-channel table), the nearest edge (replicate) or a mirror
// image without the edge (reflect). Each coordinate folds on its own, which is what padding
// axis after axis amounts to. When both blobs are packed and a packed element's lanes stay
// together (no channel padding, or constant channel padding by multiples of 4: the host sets
// whole), whole packed elements move.
// The blob layout conventions of the data-movement shaders are in _remap.py: a blob of any
// rank is described by strides and its packed coordinate; in_pack / out_pack are
// specialization constants, so a pipeline exists per packing pair and lane arithmetic is
// shifts.

layout (constant_id = 0) const int in_pack = 1;
layout (constant_id = 1) const int out_pack = 1;
layout (constant_id = 2) const int pad_type = 0;

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
layout (binding = 2) readonly buffer per_channel_pad { float per_channel_pad_data[]; };

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

    // pad before each coordinate and the input's logical extents
    int before_x;
    int before_y;
    int before_z;
    int before_c;
    int in_lw;
    int in_lh;
    int in_ld;
    int in_lc;

    float value;
    // 1: constant borders take the output channel's value from per_channel_pad_data
    int per_channel;
    int whole;
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

// an input coordinate outside the input, folded back in (replicate, reflect)
ivec4 fold(ivec4 src, ivec4 n)
{
    if (pad_type == 1)
        return clamp(src, ivec4(0), n - 1);
    if (pad_type == 2)
        return (n - 1) - abs(abs(src) - (n - 1));
    return src;
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

    const ivec4 n = ivec4(p.in_lw, p.in_lh, p.in_ld, p.in_lc);
    if (in_pack == 4 && out_pack == 4 && p.whole == 1)
    {
        const ivec4 src = pos - ivec4(p.before_x, p.before_y, p.before_z, p.before_c);
        if (pad_type == 0 && (any(lessThan(src, ivec4(0))) || any(greaterThanEqual(src, n))))
        {
            const int c = pos[p.out_axis];
            const vec4 v = p.per_channel == 1 ? vec4(per_channel_pad_data[c], per_channel_pad_data[c + 1], per_channel_pad_data[c + 2], per_channel_pad_data[c + 3]) : vec4(p.value);
            top_blob_data_4[oe] = bfpvec4(v);
            return;
        }
        buffer_cp4(top_blob_data_4, oe, bottom_blob_data_4, in_element(fold(src, n)));
        return;
    }
    for (int l = 0; l < out_pack; l++)
    {
        ivec4 q = pos;
        q[p.out_axis] += l;
        const ivec4 src = q - ivec4(p.before_x, p.before_y, p.before_z, p.before_c);
        if (pad_type == 0 && (any(lessThan(src, ivec4(0))) || any(greaterThanEqual(src, n))))
        {
            const float v = p.per_channel == 1 ? per_channel_pad_data[q.w] : p.value;
            buffer_st1(top_blob_data, oe * out_pack + l, afp(v));
            continue;
        }
        buffer_cp1(top_blob_data, oe * out_pack + l, bottom_blob_data, in_index(fold(src, n)));
    }
}
