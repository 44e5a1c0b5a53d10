"""The writer of gpuvs reference files (the reader is src/models/tensor_file.h).

The safetensors layout: an 8-byte little-endian header length, a JSON header
{name: {"dtype", "shape", "data_offsets"}, "__metadata__": {...}} padded to 8 bytes,
then the raw tensor bytes. Used by dump_resnet50.py and dump_bert.py.
"""
import ctypes
import json
import os
import struct
import sys

import torch

DTYPES = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16",
          torch.int64: "I64", torch.int32: "I32"}


def raw_bytes(t):
    """The bytes of a tensor as stored in memory (little-endian on x86 and Arm)."""
    t = t.detach().to("cpu").contiguous()
    return ctypes.string_at(t.data_ptr(), t.numel() * t.element_size())


def write_tensor_file(path, tensors, metadata):
    """tensors: ordered dict name -> tensor. Writes atomically (tmp file + rename) and
    returns the file's size in bytes."""
    assert sys.byteorder == "little"
    header = {"__metadata__": {k: str(v) for k, v in metadata.items()}}
    offset = 0
    blobs = []
    for name, t in tensors.items():
        data = raw_bytes(t)
        header[name] = {"dtype": DTYPES[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)  # safetensors pads the header to 8 bytes
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)
    os.replace(tmp, path)
    return 8 + len(text) + offset


def check_file(path, tensors):
    """Reads the file back (header, offsets, bytes) so that a broken writer shows here."""
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    assert header["__metadata__"]["format"] == "gpuvs.ref", header["__metadata__"]
    data = blob[8 + n:]
    for name, t in tensors.items():
        begin, end = header[name]["data_offsets"]
        assert data[begin:end] == raw_bytes(t), name
        assert header[name]["shape"] == list(t.shape), name
    assert len(header) == len(tensors) + 1
