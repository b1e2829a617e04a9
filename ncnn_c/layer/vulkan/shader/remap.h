// The common part of the data-movement shaders whose output element reads the input element
// source(pos) (flip.comp, tile.comp, pixelshuffle.comp; glu.comp reads two): one invocation
// per packed output element over a (w, h*d, c) grid, the blob layout conventions of _remap.py
// (a blob of any rank described by the strides of x, y, z, c in packed elements and its packed
// coordinate), in_pack / out_pack as specialization constants (a pipeline per packing pair).
// Included with #include "remap.h"; not a shader. The including shader may define
// REMAP_PARAMS (its own push constants, after the common ones) before the #include, and
// defines ivec4 source(ivec4 pos) after it: the input position an output position reads.

layout (constant_id = 0) const int in_pack = 1;
layout (constant_id = 1) const int out_pack = 1;

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

#ifndef REMAP_PARAMS
#define REMAP_PARAMS
#endif

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

    // 1 when both blobs are packed and source() keeps a packed element's lanes together
    // (lane 0 maps to a lane 0, the next lanes follow): whole packed elements move
    int whole;

    REMAP_PARAMS
} p;

ivec4 source(ivec4 pos);

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

// this invocation's packed output element: false past the output, else its index oe and the
// logical position of its lane 0
bool remap_element(out ivec4 pos, out int oe)
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
        return false;
    pos = p.outd == 1 ? ivec4(gx, gy, 0, gz) : ivec4(gx, gy % p.outh, gy / p.outh, gz);
    oe = pos.x * p.out_sx + pos.y * p.out_sy + pos.z * p.out_sz + pos.w * p.out_sc;
    pos[p.out_axis] *= out_pack;
    return true;
}

// the whole shader of a pure copy: every output scalar from source() of its position
void remap_copy()
{
    ivec4 pos;
    int oe;
    if (!remap_element(pos, oe))
        return;
    if (in_pack == 4 && out_pack == 4 && p.whole == 1)
    {
        buffer_cp4(top_blob_data_4, oe, bottom_blob_data_4, in_element(source(pos)));
        return;
    }
    for (int l = 0; l < out_pack; l++)
    {
        ivec4 q = pos;
        q[p.out_axis] += l;
        buffer_cp1(top_blob_data, oe * out_pack + l, bottom_blob_data, in_index(source(q)));
    }
}
