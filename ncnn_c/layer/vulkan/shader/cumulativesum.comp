#version 450

// CumulativeSum in place: one invocation per line along the summed coordinate (axis: 0 x,
// 1 y, 2 z, 3 c), adding one element after another in fp32 whatever afp is, as ncnn's
// reference loops. The blob is read as scalars (a packed element's lanes are consecutive),
// described as in _remap.py; pack is its elempack, a specialization constant.

layout (constant_id = 0) const int pack = 1;

layout (local_size_x_id = 233, local_size_y_id = 234, local_size_z_id = 235) in;

layout (binding = 0) buffer bottom_top_blob { sfp bottom_top_blob_data[]; };

layout (push_constant) uniform parameter
{
    // strides of x, y, z, c in packed elements and which coordinate is packed
    int sx;
    int sy;
    int sz;
    int sc;
    int packed_axis;

    // logical extents (the packed coordinate counted in scalars)
    int w;
    int h;
    int d;
    int c;
    int axis;
} p;

int index(ivec4 pos)
{
    const int o = pos[p.packed_axis];
    pos[p.packed_axis] = o / pack;
    return (pos.x * p.sx + pos.y * p.sy + pos.z * p.sz + pos.w * p.sc) * pack + o % pack;
}

void main()
{
    const int gx = int(gl_GlobalInvocationID.x);
    const int gy = int(gl_GlobalInvocationID.y);
    const int gz = int(gl_GlobalInvocationID.z);

    // the grid is the blob's extents with the summed one collapsed to 1
    ivec4 ext = ivec4(p.w, p.h, p.d, p.c);
    const int n = ext[p.axis];
    ext[p.axis] = 1;
    if (gx >= ext.x || gy >= ext.y * ext.z || gz >= ext.w)
        return;

    ivec4 pos = ivec4(gx, gy % ext.y, gy / ext.y, gz);
    float sum = 0.f;
    for (int k = 0; k < n; k++)
    {
        pos[p.axis] = k;
        const int i = index(pos);
        sum += float(buffer_ld1(bottom_top_blob_data, i));
        buffer_st1(bottom_top_blob_data, i, sum);
    }
}
