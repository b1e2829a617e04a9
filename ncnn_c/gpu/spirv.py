"""Reflection of compute-shader SPIR-V: what a pipeline needs to know to be built.

``resolve_shader_info`` reads the module's instruction stream once and reports the
number of user specialization constants, the descriptor bindings (and their kind)
and the number of push constant members. It also doubles as the structural check the
pipeline cache runs on every SPIR-V entry it loads, so malformed input raises
``SpirvError`` with the reason instead of reaching the driver.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from ..errors import NcnnError

SPIRV_MAGIC = 0x07230203

# Local size specialization ids used by every ncnn shader; they are set from the
# pipeline's local size, not from the caller's specialization list.
LOCAL_SIZE_SPEC_IDS = (233, 234, 235)

# ShaderInfo.binding_types values (ncnn's numbering, plus uniform buffers).
BINDING_NONE = 0
BINDING_STORAGE_BUFFER = 1
BINDING_STORAGE_IMAGE = 2
BINDING_COMBINED_IMAGE_SAMPLER = 3
BINDING_UNIFORM_BUFFER = 4

# opcodes
_OP_ENTRY_POINT = 15
_OP_TYPE_INT = 21
_OP_TYPE_FLOAT = 22
_OP_TYPE_VECTOR = 23
_OP_TYPE_MATRIX = 24
_OP_TYPE_IMAGE = 25
_OP_TYPE_SAMPLED_IMAGE = 27
_OP_TYPE_ARRAY = 28
_OP_TYPE_RUNTIME_ARRAY = 29
_OP_TYPE_STRUCT = 30
_OP_TYPE_POINTER = 32
_OP_VARIABLE = 59
_OP_FUNCTION = 54
_OP_DECORATE = 71

# decorations
_DEC_SPEC_ID = 1
_DEC_BLOCK = 2
_DEC_BUFFER_BLOCK = 3
_DEC_BINDING = 33

# storage classes
_SC_UNIFORM_CONSTANT = 0
_SC_UNIFORM = 2
_SC_PUSH_CONSTANT = 9
_SC_STORAGE_BUFFER = 12

_EXEC_MODEL_GLCOMPUTE = 5
_MAX_BINDINGS = 64


class SpirvError(NcnnError):
    """SPIR-V that cannot be used for a compute pipeline."""


@dataclass(frozen=True)
class ShaderInfo:
    specialization_count: int = 0
    binding_count: int = 0
    push_constant_count: int = 0
    binding_types: tuple[int, ...] = field(default_factory=tuple)
    # The caller's specialization ids in the order the SPIR-V declares them.
    specialization_ids: tuple[int, ...] = field(default_factory=tuple)
    # Per binding, the element shapes of the storage buffers declared on it: "s" for an
    # array of scalars, "v" for vectors (or matrices, structs): what tells a packed shader's
    # body from its unpacked twin, whose bindings and constants are the same.
    buffer_shapes: tuple[frozenset[str], ...] = field(default_factory=tuple)


def words_of(spirv) -> tuple[int, ...]:
    """The 32-bit words of a SPIR-V module (bytes-like or a word sequence)."""
    if isinstance(spirv, (bytes, bytearray, memoryview)):
        data = bytes(spirv)
        if len(data) % 4:
            raise SpirvError(f"SPIR-V size {len(data)} is not a multiple of 4")
        return struct.unpack(f"<{len(data) // 4}I", data)
    return tuple(int(w) & 0xFFFFFFFF for w in spirv)


def resolve_shader_info(spirv) -> ShaderInfo:
    """Reflect SPIR-V (bytes or words); raises SpirvError when it is malformed."""
    words = words_of(spirv)
    if len(words) < 5:
        raise SpirvError(f"SPIR-V too short ({len(words)} words, header needs 5)")
    if words[0] != SPIRV_MAGIC:
        raise SpirvError(f"bad SPIR-V magic 0x{words[0]:08x}")
    bound = words[3]
    if bound == 0 or bound > 0x400000:
        raise SpirvError(f"implausible SPIR-V id bound {bound}")

    spec_ids: list[int] = []
    bindings: dict[int, int] = {}  # id -> binding
    blocks: set[int] = set()
    buffer_blocks: set[int] = set()
    pointers: dict[int, tuple[int, int]] = {}  # id -> (storage class, pointee)
    arrays: dict[int, int] = {}  # id -> element type
    structs: dict[int, int] = {}  # id -> member count
    first_member: dict[int, int] = {}  # struct id -> type of its first member
    scalars: set[int] = set()
    images: dict[int, int] = {}  # id -> sampled operand
    sampled_images: set[int] = set()
    variables: list[tuple[int, int, int]] = []  # (id, pointer type, storage class)
    has_compute_entry = False
    in_body = False

    pos = 5
    n = len(words)
    while pos < n:
        w = words[pos]
        count, op = w >> 16, w & 0xFFFF
        if count == 0 or pos + count > n:
            raise SpirvError(f"SPIR-V instruction at word {pos} (opcode {op}) runs past the end")
        if in_body or op == _OP_FUNCTION:
            # function bodies follow every decoration, type and global variable (the logical
            # layout of a module): three quarters of a shader's words, walked for their bounds
            in_body = True
            pos += count
            continue
        a = words[pos + 1 : pos + count]
        if op == _OP_DECORATE and len(a) >= 2:
            target, dec = a[0], a[1]
            if dec == _DEC_SPEC_ID and len(a) >= 3:
                if a[2] not in LOCAL_SIZE_SPEC_IDS:
                    spec_ids.append(a[2])
            elif dec == _DEC_BINDING and len(a) >= 3:
                bindings[target] = a[2]
            elif dec == _DEC_BLOCK:
                blocks.add(target)
            elif dec == _DEC_BUFFER_BLOCK:
                buffer_blocks.add(target)
        elif op == _OP_ENTRY_POINT and a:
            has_compute_entry = has_compute_entry or a[0] == _EXEC_MODEL_GLCOMPUTE
        elif op == _OP_TYPE_POINTER and len(a) >= 3:
            pointers[a[0]] = (a[1], a[2])
        elif op in (_OP_TYPE_ARRAY, _OP_TYPE_RUNTIME_ARRAY) and len(a) >= 2:
            arrays[a[0]] = a[1]
        elif op == _OP_TYPE_STRUCT and a:
            structs[a[0]] = len(a) - 1
            if len(a) > 1:
                first_member[a[0]] = a[1]
        elif op in (_OP_TYPE_INT, _OP_TYPE_FLOAT) and a:
            scalars.add(a[0])
        elif op == _OP_TYPE_IMAGE and len(a) >= 7:
            images[a[0]] = a[6]
        elif op == _OP_TYPE_SAMPLED_IMAGE and a:
            sampled_images.add(a[0])
        elif op == _OP_VARIABLE and len(a) >= 3:
            variables.append((a[1], a[0], a[2]))
        pos += count

    if not has_compute_entry:
        raise SpirvError("SPIR-V has no GLCompute entry point")
    if len(set(spec_ids)) != len(spec_ids):
        raise SpirvError("SPIR-V declares a specialization id twice")

    push_constant_count = 0
    binding_types: dict[int, int] = {}
    shapes: dict[int, set[str]] = {}
    for var_id, ptr_type, storage in variables:
        pointee = pointers.get(ptr_type, (None, None))[1]
        if pointee is None:
            raise SpirvError(f"SPIR-V variable %{var_id} has no pointer type")
        while pointee in arrays:
            pointee = arrays[pointee]
        if storage == _SC_PUSH_CONSTANT:
            if pointee not in structs:
                raise SpirvError("SPIR-V push constant block is not a struct")
            push_constant_count = max(push_constant_count, structs[pointee])
            continue
        if var_id not in bindings:
            continue
        if storage == _SC_STORAGE_BUFFER or (storage == _SC_UNIFORM and pointee in buffer_blocks):
            kind = BINDING_STORAGE_BUFFER
        elif storage == _SC_UNIFORM and pointee in blocks:
            kind = BINDING_UNIFORM_BUFFER
        elif storage == _SC_UNIFORM_CONSTANT and pointee in sampled_images:
            kind = BINDING_COMBINED_IMAGE_SAMPLER
        elif storage == _SC_UNIFORM_CONSTANT and pointee in images:
            kind = BINDING_STORAGE_IMAGE if images[pointee] == 2 else BINDING_COMBINED_IMAGE_SAMPLER
        else:
            raise SpirvError(f"SPIR-V binding {bindings[var_id]} has an unsupported resource type")
        binding = bindings[var_id]
        if binding >= _MAX_BINDINGS:
            raise SpirvError(f"SPIR-V binding {binding} out of range")
        # Vulkan lets several variables alias one binding (a buffer read as scalars and as
        # vec4s) as long as their descriptor types agree
        if binding_types.get(binding, kind) != kind:
            raise SpirvError(f"SPIR-V binding {binding} declared twice with different types")
        binding_types[binding] = kind
        if kind == BINDING_STORAGE_BUFFER and pointee in first_member:
            member = first_member[pointee]
            element = arrays.get(member, member)
            shapes.setdefault(binding, set()).add("s" if element in scalars else "v")

    binding_count = max(binding_types) + 1 if binding_types else 0
    return ShaderInfo(
        specialization_count=len(spec_ids),
        binding_count=binding_count,
        push_constant_count=push_constant_count,
        binding_types=tuple(binding_types.get(i, BINDING_NONE) for i in range(binding_count)),
        specialization_ids=tuple(sorted(spec_ids)),
        buffer_shapes=tuple(frozenset(shapes.get(i, ())) for i in range(binding_count)),
    )
