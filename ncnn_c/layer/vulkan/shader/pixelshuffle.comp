#version 450

// PixelShuffle (depth to space): output channel q at (x, y) reads input channel
// q * r * r + sh * r + sw (mode 0, PyTorch) or (sh * r + sw) * channels + q (mode 1, ONNX
// DCR; channels: the output's) at (x / r, y / r), where (sh, sw) = (y % r, x % r).

#define REMAP_PARAMS int r; int mode; int channels;
#include "remap.h"

ivec4 source(ivec4 pos)
{
    const int sub = (pos.y % p.r) * p.r + pos.x % p.r;
    const int c = p.mode == 0 ? pos.w * p.r * p.r + sub : sub * p.channels + pos.w;
    return ivec4(pos.x / p.r, pos.y / p.r, 0, c);
}

void main()
{
    remap_copy();
}
