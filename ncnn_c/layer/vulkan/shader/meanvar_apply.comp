#version 450

// Normalisation apply pass (GroupNorm, InstanceNorm, LayerNorm, Normalize), in place, on
// scalars (elempack-1 blobs and 1-D blobs; packed ones use meanvar_apply_pack4.comp):
// y = (x - shift[seg]) * factor[seg], then * gamma[a] (+ beta[a]).
//
// The grid is (n, nslice, rows): x walks a slice's values, y the slice within the channel and
// z the channel (work group ids: y and z extents are 1, so they are uniform over the group,
// and on a CPU device, lavapipe, a load at a uniform index is one load where a per-invocation
// index is a gather). The segment is floor(ch / nch) * segmul + slice (+ the value's index
// with kseg: Normalize across channels), ch / nch through a float reciprocal (exact for
// channel indices far below 2^20; inv_nch 0 drops the term). gmode picks the gamma/beta index:
// 0 the channel (times gmul: 0 for one shared value), 1 the position in the slice, 2 the
// segment.

layout (constant_id = 0) const int has_gamma = 0;
layout (constant_id = 1) const int has_beta = 0;
layout (constant_id = 2) const int gmode = 0;
layout (constant_id = 3) const int kseg = 0;

layout (local_size_x_id = 233, local_size_y_id = 234, local_size_z_id = 235) in;

layout (binding = 0) buffer bottom_top_blob { sfp bottom_top_blob_data[]; };
layout (binding = 1) readonly buffer stats_blob { vec2 stats_data[]; };
layout (binding = 2) readonly buffer gamma_blob { float gamma_data[]; };
layout (binding = 3) readonly buffer beta_blob { float beta_data[]; };

layout (push_constant) uniform parameter
{
    int lstride;
    int n;
    int nslice;
    int rows;
    float inv_nch;
    int segmul;
    int gmul;
} p;

void main()
{
    const int k = int(gl_GlobalInvocationID.x);
    const int r = int(gl_WorkGroupID.y);
    const int ch = int(gl_WorkGroupID.z);

    if (k >= p.n || r >= p.nslice || ch >= p.rows)
        return;

    const int seg = int((float(ch) + 0.5f) * p.inv_nch) * p.segmul + r + (kseg == 1 ? k : 0);
    const int i = ch * p.lstride + r * p.n + k;
    const vec2 st = stats_data[seg];
    float v = (float(buffer_ld1(bottom_top_blob_data, i)) - st.x) * st.y;

    const int a = gmode == 0 ? ch * p.gmul : gmode == 1 ? k : seg;
    if (has_gamma == 1)
        v *= gamma_data[a];
    if (has_beta == 1)
        v += beta_data[a];

    // back through afp: with fp16 arithmetic the result is an fp16 value even in fp32 blobs
    buffer_st1(bottom_top_blob_data, i, afp(v));
}
