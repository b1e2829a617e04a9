#version 450

// Fold (col2im) into an elempack 1 3-D top: output cell (oy, ox) of channel q sums the
// bottom's row (q * kernel_h + ky) * kernel_w + kx at column wy * windows_w + wx for every
// tap whose window (wy, wx) covers it, i.e. oy + pad_top == wy * stride_h + ky * dilation_h
// (likewise in x) with the window inside the windows_h x windows_w grid. A gather: one
// invocation per output cell over a (outw, outh, channels) grid, the sum in fp32 and in
// the CPU's tap order.

layout (constant_id = 0) const int kernel_w = 1;
layout (constant_id = 1) const int kernel_h = 1;
layout (constant_id = 2) const int dilation_w = 1;
layout (constant_id = 3) const int dilation_h = 1;
layout (constant_id = 4) const int stride_w = 1;
layout (constant_id = 5) const int stride_h = 1;

layout (local_size_x_id = 233, local_size_y_id = 234, local_size_z_id = 235) in;

layout (binding = 0) readonly buffer bottom_blob { sfp bottom_blob_data[]; };
layout (binding = 1) writeonly buffer top_blob { sfp top_blob_data[]; };

layout (push_constant) uniform parameter
{
    // columns of the bottom (windows_w * windows_h)
    int w;
    int windows_w;
    int windows_h;
    int outw;
    int outh;
    int outc;
    int outcstep;
    int pad_left;
    int pad_top;
} p;

void main()
{
    const int ox = int(gl_GlobalInvocationID.x);
    const int oy = int(gl_GlobalInvocationID.y);
    const int q = int(gl_GlobalInvocationID.z);

    if (ox >= p.outw || oy >= p.outh || q >= p.outc)
        return;

    const int py = oy + p.pad_top;
    const int px = ox + p.pad_left;
    float sum = 0.f;
    for (int ky = 0; ky < kernel_h; ky++)
    {
        const int ty = py - ky * dilation_h;
        const int wy = ty / stride_h;
        if (ty < 0 || wy * stride_h != ty || wy >= p.windows_h)
            continue;
        for (int kx = 0; kx < kernel_w; kx++)
        {
            const int tx = px - kx * dilation_w;
            const int wx = tx / stride_w;
            if (tx < 0 || wx * stride_w != tx || wx >= p.windows_w)
                continue;
            const int row = (q * kernel_h + ky) * kernel_w + kx;
            sum += float(buffer_ld1(bottom_blob_data, row * p.w + wy * p.windows_w + wx));
        }
    }
    buffer_st1(top_blob_data, q * p.outcstep + oy * p.outw + ox, afp(sum));
}
