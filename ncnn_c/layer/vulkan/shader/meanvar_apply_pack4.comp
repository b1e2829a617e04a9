#version 450

// meanvar_apply.comp for elempack-4 blobs of 2-D..4-D: one invocation per packed element,
// whose four lanes are channels 4q..4q+3 of the work group's packed line q, each with its own
// segment and (by gmode) gamma/beta; the loads stay uniform over the group unless they
// depend on the position (kseg, gmode 1).

layout (constant_id = 0) const int has_gamma = 0;
layout (constant_id = 1) const int has_beta = 0;
layout (constant_id = 2) const int gmode = 0;
layout (constant_id = 3) const int kseg = 0;

layout (local_size_x_id = 233, local_size_y_id = 234, local_size_z_id = 235) in;

#if NCNN_fp16_packed && !NCNN_fp16_storage
// without 16-bit storage a packed blob stays fp32
layout (binding = 0) buffer bottom_top_blob { vec4 bottom_top_blob_data[]; };
#define blob_ld4(i) bottom_top_blob_data[i]
#define blob_st4(i, v) bottom_top_blob_data[i] = vec4(afpvec4(v))
#else
layout (binding = 0) buffer bottom_top_blob { sfpvec4 bottom_top_blob_data[]; };
#define blob_ld4(i) vec4(buffer_ld4(bottom_top_blob_data, i))
#define blob_st4(i, v) buffer_st4(bottom_top_blob_data, i, afpvec4(v))
#endif
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
    const int q = int(gl_WorkGroupID.z);

    if (k >= p.n || r >= p.nslice || q >= p.rows)
        return;

    const ivec4 ch = ivec4(q * 4) + ivec4(0, 1, 2, 3);
    const ivec4 seg = ivec4((vec4(ch) + 0.5f) * p.inv_nch) * p.segmul + r + (kseg == 1 ? k : 0);
    const int i = q * p.lstride + r * p.n + k;

    const vec2 s0 = stats_data[seg.x];
    const vec2 s1 = stats_data[seg.y];
    const vec2 s2 = stats_data[seg.z];
    const vec2 s3 = stats_data[seg.w];
    vec4 v = (blob_ld4(i) - vec4(s0.x, s1.x, s2.x, s3.x)) * vec4(s0.y, s1.y, s2.y, s3.y);

    const ivec4 a = gmode == 0 ? ch * p.gmul : gmode == 1 ? ivec4(k) : seg;
    if (has_gamma == 1)
        v *= vec4(gamma_data[a.x], gamma_data[a.y], gamma_data[a.z], gamma_data[a.w]);
    if (has_beta == 1)
        v += vec4(beta_data[a.x], beta_data[a.y], beta_data[a.z], beta_data[a.w]);

    blob_st4(i, v);
}
