#version 450

// Unfold (im2col) of an elempack 1 3-D bottom: top row (q * kernel_h + ky) * kernel_w + kx,
// column oy * outw + ox holds input cell (oy * stride_h - pad_top + ky * dilation_h,
// ox * stride_w - pad_left + kx * dilation_w) of channel q, or pad_value outside it. One
// invocation per top element over a (outw * outh, rows, 1) grid.

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
    int w;
    int h;
    int cstep;
    int outw;
    int outh;
    int rows;
    int pad_left;
    int pad_top;
    float pad_value;
} p;

void main()
{
    const int gx = int(gl_GlobalInvocationID.x);
    const int gy = int(gl_GlobalInvocationID.y);

    const int cols = p.outw * p.outh;
    if (gx >= cols || gy >= p.rows)
        return;

    const int maxk = kernel_w * kernel_h;
    const int q = gy / maxk;
    const int k = gy - q * maxk;
    const int ky = k / kernel_w;
    const int kx = k - ky * kernel_w;
    const int oy = gx / p.outw;
    const int ox = gx - oy * p.outw;

    const int sy = oy * stride_h - p.pad_top + ky * dilation_h;
    const int sx = ox * stride_w - p.pad_left + kx * dilation_w;
    const bool inside = sy >= 0 && sy < p.h && sx >= 0 && sx < p.w;
    const int i = gy * cols + gx;
    if (inside)
    {
        buffer_cp1(top_blob_data, i, bottom_blob_data, q * p.cstep + sy * p.w + sx);
    }
    else
    {
        buffer_st1(top_blob_data, i, afp(p.pad_value));
    }
}
