#version 450

// GLU: output element pos is a * sigmoid(b), a the input at pos and b the input at pos moved
// by half the split axis (the offset, one non-zero coordinate). Computed in fp32 whatever afp
// is, as ncnn's CPU: a * (1 / (1 + exp(-b))).

#define REMAP_PARAMS int off_x; int off_y; int off_z; int off_c;
#include "remap.h"

#if NCNN_fp16_packed && !NCNN_fp16_storage
#define blob_ld4(i) bottom_blob_data_4[i]
#define blob_st4(i, v) top_blob_data_4[i] = v
#else
#define blob_ld4(i) vec4(buffer_ld4(bottom_blob_data_4, i))
#define blob_st4(i, v) buffer_st4(top_blob_data_4, i, v)
#endif

ivec4 source(ivec4 pos)
{
    return pos;
}

void main()
{
    ivec4 pos;
    int oe;
    if (!remap_element(pos, oe))
        return;
    const ivec4 off = ivec4(p.off_x, p.off_y, p.off_z, p.off_c);
    if (in_pack == 4 && out_pack == 4 && p.whole == 1)
    {
        const vec4 a = blob_ld4(in_element(pos));
        const vec4 b = blob_ld4(in_element(pos + off));
        blob_st4(oe, a * (1.f / (1.f + exp(-b))));
        return;
    }
    for (int l = 0; l < out_pack; l++)
    {
        ivec4 q = pos;
        q[p.out_axis] += l;
        const float a = float(buffer_ld1(bottom_blob_data, in_index(q)));
        const float b = float(buffer_ld1(bottom_blob_data, in_index(q + off)));
        buffer_st1(top_blob_data, oe * out_pack + l, a * (1.f / (1.f + exp(-b))));
    }
}
