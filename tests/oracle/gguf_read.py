"""Oracle for rlf's GGUF export (model/gguf.h): the `gguf` package (llama.cpp's
own Python reader) loads the file.

usage: gguf_read.py FILE.gguf OUT_DIR
writes OUT_DIR/meta.json ({key: value} for scalar and string fields, arrays of
tokens/scores/token_type, and per tensor its type and shape) and
OUT_DIR/tensors.safetensors (every tensor dequantized to float32, in numpy
order: rows, then columns).
"""
import json
import sys

import numpy as np
from gguf import GGUFReader, GGUFValueType
from gguf.quants import dequantize
from safetensors.numpy import save_file


def field_value(f):
    t = f.types[0]
    if t == GGUFValueType.STRING:
        return bytes(f.parts[-1]).decode("utf-8")
    if t == GGUFValueType.ARRAY:
        if f.types[1] == GGUFValueType.STRING:
            return [bytes(f.parts[i]).decode("utf-8") for i in f.data]
        return [f.parts[i].tolist()[0] for i in f.data]
    return f.parts[-1].tolist()[0]


def main():
    path, out = sys.argv[1], sys.argv[2]
    r = GGUFReader(path)
    meta = {k: field_value(f) for k, f in r.fields.items() if not k.startswith("GGUF.")}
    meta["_tensors"] = {}
    arrays = {}
    for t in r.tensors:
        shape = [int(x) for x in reversed(t.shape.tolist())]  # numpy order
        data = dequantize(t.data, t.tensor_type).astype(np.float32).reshape(shape)
        arrays[t.name] = np.ascontiguousarray(data)
        meta["_tensors"][t.name] = {"type": t.tensor_type.name, "shape": shape}
    save_file(arrays, out + "/tensors.safetensors")
    with open(out + "/meta.json", "w") as f:
        json.dump(meta, f)


if __name__ == "__main__":
    main()
