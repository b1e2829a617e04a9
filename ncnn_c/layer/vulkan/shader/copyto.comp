#version 450

// Copy a whole blob into a region of a larger one, offset along any of x, y, d and c.
// Concat records one such dispatch per input; crop/slice-style layers can reuse it.
//
// When the region is one contiguous run of whole channels (an offset along c only, both
// blobs with the same cstep) the host sets vec4s to the run length in vec4s and the
// grid to (8, ceil(vec4s / 8), 1): the copy then moves 16-byte vectors, a quarter of
// the loads and stores (channels start 16-byte aligned, so the run does too).

layout (local_size_x_id = 233, local_size_y_id = 234, local_size_z_id = 235) in;

#if NCNN_fp16_packed && !NCNN_fp16_storage
// fp16_packed packs elempack 4 blobs only: an elempack 1 blob stays fp32
#define bfp float
#define bfpvec4 vec4
#else
#define bfp sfp
#define bfpvec4 sfpvec4
#endif

// each buffer is bound twice, as vec4s for whole-channel runs and as scalars for the
// rest: a 16-bit storage type allows no component access without fp16 arithmetic
layout (binding = 0) readonly buffer bottom_blob { bfpvec4 bottom_blob_data[]; };
layout (binding = 1) writeonly buffer top_blob { bfpvec4 top_blob_data[]; };
layout (binding = 0) readonly buffer bottom_blob_1 { bfp bottom_blob_data_1[]; };
layout (binding = 1) writeonly buffer top_blob_1 { bfp top_blob_data_1[]; };

layout (push_constant) uniform parameter
{
    int w;
    int h;
    int d;
    int c;
    int cstep;

    int outw;
    int outh;
    int outcstep;

    int offset_x;
    int offset_y;
    int offset_d;
    int offset_c;

    int vec4s;
} p;

void main()
{
    const int gx = int(gl_GlobalInvocationID.x);
    const int gy = int(gl_GlobalInvocationID.y);
    const int gz = int(gl_GlobalInvocationID.z);

    if (p.vec4s > 0)
    {
        const int i = gy * 8 + gx;
        if (gx >= 8 || i >= p.vec4s)
            return;
        buffer_cp4(top_blob_data, p.offset_c * p.outcstep / 4 + i, bottom_blob_data, i);
        return;
    }

    // grid is (w, h * d, c): within one channel the d and h planes are contiguous
    if (gx >= p.w || gy >= p.h * p.d || gz >= p.c)
        return;

    const int y = gy % p.h;
    const int z = gy / p.h;

    const int gi = gz * p.cstep + gy * p.w + gx;
    const int oi = (gz + p.offset_c) * p.outcstep + ((z + p.offset_d) * p.outh + y + p.offset_y) * p.outw + gx + p.offset_x;

    top_blob_data_1[oi] = bottom_blob_data_1[gi];
}
