#version 450

// Layout conversion between blob forms: elempack 1 <-> 4 and fp32 <-> fp16 storage, in
// one pass. The net uses it after an upload (fp32 pack1 -> the storage/packing the first
// consumer wants), before a download (-> fp32 pack1), and between layers that want
// different forms; the Packing and Cast layers run it too.
//
// Every form is a push constant, not a specialization constant: one pipeline serves
// every conversion, so a net needs exactly one, created in load_model, and a warm start
// finds it in the cache whatever blobs the first inference meets. Conversions move
// memory, they do no arithmetic: a uniform branch costs nothing next to the loads.
//
// Both buffers are read and written as 32-bit words (fp32 bit patterns, or two halves
// in a word, the first in the low half, as unpackHalf2x16 reads them), so the shader
// needs no 16-bit storage feature and no option bit changes its code. One invocation
// writes one output word: one fp32 scalar or two fp16 scalars.
//
// A blob is seen as `outer` logical lines of `inner` scalars, `stride` elements apart:
// 1-D: outer w, inner 1; 2-D: outer h, inner w; 3-D/4-D: outer c, inner w*h*d, stride
// cstep. Logical scalar (q, i) of a blob with elempack P sits at scalar
// (q / P) * stride * P + i * P + q % P. Output slots that hold no data (cstep padding,
// the padded lanes past outer) are written as zeros.

layout (local_size_x_id = 233, local_size_y_id = 234, local_size_z_id = 235) in;

layout (binding = 0) readonly buffer bottom_blob { uint bottom_blob_data[]; };
layout (binding = 1) writeonly buffer top_blob { uint top_blob_data[]; };

layout (push_constant) uniform parameter
{
    int outer;
    int inner;
    int in_stride;
    int out_stride;
    int in_elempack;
    int out_elempack;
    // 1 when the blob holds halves
    int in_fp16;
    int out_fp16;
    // output scalar slots to write, and invocations per grid row (the grid is 2-D so
    // that large blobs stay under the per-dimension group count limit)
    int out_total;
    int row;
} p;

float load_scalar(int q, int i)
{
    if (q >= p.outer || i >= p.inner)
        return 0.f;
    const int idx = (q / p.in_elempack) * p.in_stride * p.in_elempack + i * p.in_elempack + q % p.in_elempack;
    if (p.in_fp16 == 1)
    {
        const vec2 two = unpackHalf2x16(bottom_blob_data[idx >> 1]);
        return (idx & 1) == 0 ? two.x : two.y;
    }
    return uintBitsToFloat(bottom_blob_data[idx]);
}

// the value output scalar slot s holds
float slot_value(int s)
{
    if (s >= p.out_total)
        return 0.f;
    const int group_size = p.out_stride * p.out_elempack;
    const int group = s / group_size;
    const int rem = s - group * group_size;
    const int i = rem / p.out_elempack;
    const int lane = rem - i * p.out_elempack;
    return load_scalar(group * p.out_elempack + lane, i);
}

void main()
{
    const int word = int(gl_GlobalInvocationID.y) * p.row + int(gl_GlobalInvocationID.x);
    const int lanes = p.out_fp16 == 1 ? 2 : 1;
    if (int(gl_GlobalInvocationID.x) >= p.row || word * lanes >= p.out_total)
        return;

    if (p.out_fp16 == 1)
        top_blob_data[word] = packHalf2x16(vec2(slot_value(word * 2), slot_value(word * 2 + 1)));
    else
        top_blob_data[word] = floatBitsToUint(slot_value(word));
}
