#version 450

// RotaryEmbed over elempack-1 blobs: each pair (x0, x1) of a row of x becomes
// (x0 cos - x1 sin, x0 sin + x1 cos) with row t's cos / sin value j. One invocation per pair;
// grid (embed_dim / 2, seqlen, heads). The pair is (j, j + half), or (2j, 2j + 1) when
// interleaved. Computed in fp32 whatever afp is (a rotation of fp16 values in fp16 would add
// a rounding per product).

layout (constant_id = 0) const int interleaved = 0;

layout (local_size_x_id = 233, local_size_y_id = 234, local_size_z_id = 235) in;

layout (binding = 0) readonly buffer bottom_blob { sfp bottom_blob_data[]; };
layout (binding = 1) readonly buffer cos_blob { sfp cos_blob_data[]; };
layout (binding = 2) readonly buffer sin_blob { sfp sin_blob_data[]; };
layout (binding = 3) writeonly buffer top_blob { sfp top_blob_data[]; };

layout (push_constant) uniform parameter
{
    int half_w;
    int seqlen;
    int heads;
    int w;
    int cstep;
    int cos_w;
    int sin_w;
} p;

void main()
{
    const int j = int(gl_GlobalInvocationID.x);
    const int t = int(gl_GlobalInvocationID.y);
    const int q = int(gl_GlobalInvocationID.z);

    if (j >= p.half_w || t >= p.seqlen || q >= p.heads)
        return;

    const int row = q * p.cstep + t * p.w;
    const int i0 = row + (interleaved == 1 ? 2 * j : j);
    const int i1 = interleaved == 1 ? i0 + 1 : i0 + p.half_w;

    const float x0 = float(buffer_ld1(bottom_blob_data, i0));
    const float x1 = float(buffer_ld1(bottom_blob_data, i1));
    const float c = float(buffer_ld1(cos_blob_data, t * p.cos_w + j));
    const float s = float(buffer_ld1(sin_blob_data, t * p.sin_w + j));

    buffer_st1(top_blob_data, i0, afp(x0 * c - x1 * s));
    buffer_st1(top_blob_data, i1, afp(x0 * s + x1 * c));
}
