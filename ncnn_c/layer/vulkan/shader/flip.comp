#version 450

// Flip: output position k reads the input at the mirrored coordinate along each flipped axis
// (flip_x .. flip_c: 1 flipped, 0 kept); the output has the input's shape.

#define REMAP_PARAMS int flip_x; int flip_y; int flip_z; int flip_c; int inw; int inh; int ind; int inc;
#include "remap.h"

ivec4 source(ivec4 pos)
{
    const ivec4 last = ivec4(p.inw, p.inh, p.ind, p.inc) - 1;
    return mix(pos, last - pos, bvec4(p.flip_x == 1, p.flip_y == 1, p.flip_z == 1, p.flip_c == 1));
}

void main()
{
    remap_copy();
}
