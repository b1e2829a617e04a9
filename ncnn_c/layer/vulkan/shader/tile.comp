#version 450

// Tile: output position k reads the input at k modulo the input's extents (an axis the input
// lacks has extent 1), which covers both of ncnn's forms and a rank that grows.

#define REMAP_PARAMS int inw; int inh; int ind; int inc;
#include "remap.h"

ivec4 source(ivec4 pos)
{
    return pos % ivec4(p.inw, p.inh, p.ind, p.inc);
}

void main()
{
    remap_copy();
}
