"""A digest of a compiled kernel's machine code: what the GPU loads of it, and nothing that only describes it.

A cubin (and an AMD code object) is an ELF file. The sections it loads onto the device are marked SHF_ALLOC: the
instructions (`.text.<kernel>`), the constant banks, the shared-memory reservation. These are hashed, each with its
name, type and size. The sections that only describe the code are not: line tables, debug info, symbols and
string tables. Those hold the source file's path and line numbers, which differ between two copies of the same
source without changing one instruction. Two kernels with the same digest run the same code. The search uses this
to skip a move that compiled to the incumbent's own code (proposers/same_program.py). Triton keeps the binary in
`compiled.asm["cubin"]` (NVIDIA) or `["hsaco"]` (AMD).
"""

from __future__ import annotations

import hashlib
import struct
from typing import Any

SHF_ALLOC = 0x2
SHT_NOBITS = 8  # a section that takes memory on the device but has no bytes in the file (shared memory)
BINARY_KEYS = ("cubin", "hsaco")


def elf_digest(data: bytes) -> str | None:
    """sha256 over the loaded sections of a 64-bit little-endian ELF; None for anything else or a malformed one."""
    if len(data) < 64 or data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        return None
    try:
        (shoff,) = struct.unpack_from("<Q", data, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
        if shentsize < 64 or shnum == 0 or shstrndx >= shnum or shoff + shnum * shentsize > len(data):
            return None
        headers = [struct.unpack_from("<IIQQQQ", data, shoff + i * shentsize) for i in range(shnum)]
        _, _, _, _, names_at, names_size = headers[shstrndx]
        names = data[names_at : names_at + names_size]
        digest = hashlib.sha256()
        for name_at, kind, flags, _, offset, size in headers:
            if not flags & SHF_ALLOC:
                continue
            name = names[name_at : names.find(b"\0", name_at)] if name_at < len(names) else b""
            digest.update(name + b"\0" + struct.pack("<IQ", kind, size))
            if kind != SHT_NOBITS:
                if offset + size > len(data):
                    return None
                digest.update(data[offset : offset + size])
        return digest.hexdigest()[:32]
    except struct.error:
        return None


def code_digest(compiled: Any) -> str | None:
    """The digest of a Triton compiled kernel's binary, where its `asm` holds one; None where not known."""
    asm = getattr(compiled, "asm", None)
    if not isinstance(asm, dict):
        return None
    for key in BINARY_KEYS:
        binary = asm.get(key)
        if isinstance(binary, bytes | bytearray):
            return elf_digest(bytes(binary))
    return None
