// ncnn's float -> int8 (ncnn_c/layer/_int8.py float2int8) for the int8 shaders: round half
// away from zero, computed as trunc(v + copysign(0.5, v)) in fp32 as ncnn's x86 loops do, NaN
// and values beyond int32 to -127 (cvttps gives INT_MIN there), then saturate to [-127, 127].
// The result is an integer-valued float: GPU blobs hold int8 widened by value (fp16 holds
// -127..127 exactly too). Included with #include "vulkan_int8.h"; not a shader.
//
// The caller computes v with `precise` arithmetic: a multiply fused into the + 0.5 (an fma)
// would round once instead of twice and move ties, unlike the CPU.

float float2int8(float v)
{
    precise float t = v + (v < 0.f ? -0.5f : 0.5f);
    t = trunc(t);
    if (!(abs(t) < 2147483648.f))
        t = -127.f;
    return clamp(t, -127.f, 127.f);
}
