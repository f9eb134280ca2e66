"""Export: trained weights -> a qwen35 GGUF written by Tandem's own C++ writer.

1. the weights directory (model/qwen35/trained_weights.h): manifest.json + one raw little-endian
   F32 file per GGUF tensor, the embedding scattered into the full vocabulary (unused rows zero);
2. tandem-import-weights: the GGUF with every llama.cpp key, the tokenizer and chat template (F16 by
   default; F32 keeps the trained values exactly);
3. tandem-quantize (optional): e.g. Q4_0 with llama-quantize's type rules.

Why a directory and not a GGUF from Python: the file's metadata, vocabulary, tensor order and type
rules are then written by one writer, the generator Tandem's tests and benches already check against
llama.cpp, instead of a second GGUF writer in Python that could drift from it.

usage: /usr/bin/python3 tools/train/export.py CKPT.pt OUT_DIR --build BUILD [--tokenizer-json F]
                                             [--type F16] [--quantize Q4_0] [--output-type T]
Writes OUT_DIR/weights/, OUT_DIR/model-<type>.gguf and OUT_DIR/model-<quant>.gguf.
"""

import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

FORMAT = "tandem-qwen35-weights/1"


def write_weights_dir(model, out_dir, name="", description=""):
    os.makedirs(out_dir, exist_ok=True)
    tensors = []
    for tname, x in model.gguf_tensors().items():
        fname = tname + ".f32"
        x.numpy().astype("<f4").tofile(os.path.join(out_dir, fname))
        tensors.append({"name": tname, "ne": list(reversed(list(x.shape))), "file": fname})
    manifest = {"format": FORMAT, "name": name, "description": description, "shape": model.shape.to_dict(),
                "tensors": tensors}
    with open(os.path.join(out_dir, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    return out_dir


def import_gguf(build, weights_dir, out_path, ftype="F16", tokenizer_json=None):
    cmd = [os.path.join(build, "tandem-import-weights"), "-w", weights_dir, "-o", out_path, "--type", ftype]
    if tokenizer_json:
        cmd += ["--tokenizer-json", tokenizer_json]
    subprocess.run(cmd, check=True, stdout=sys.stderr)
    return out_path


def quantize(build, src, dst, qtype, output_type=None):
    cmd = [os.path.join(build, "tandem-quantize"), src, dst, qtype]
    if output_type:
        cmd += ["--output-type", output_type]
    subprocess.run(cmd, check=True, stdout=sys.stderr)
    return dst


def export(model, out_dir, build, tokenizer_json=None, ftype="F16", quant=None, output_type=None, name="",
           description=""):
    """Returns {"weights": dir, ftype: path, quant: path}."""
    out = {"weights": write_weights_dir(model, os.path.join(out_dir, "weights"), name, description)}
    out[ftype] = import_gguf(build, out["weights"], os.path.join(out_dir, "model-%s.gguf" % ftype.lower()), ftype,
                             tokenizer_json)
    if quant:
        out[quant] = quantize(build, out[ftype], os.path.join(out_dir, "model-%s.gguf" % quant.lower()), quant,
                              output_type)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("checkpoint")
    ap.add_argument("out_dir")
    ap.add_argument("--build", required=True, help="Tandem's build directory (tandem-import-weights, tandem-quantize)")
    ap.add_argument("--tokenizer-json", help="the HF tokenizer.json the data was tokenized with (default: built-in)")
    ap.add_argument("--type", default="F16")
    ap.add_argument("--quantize", help="e.g. Q4_0")
    ap.add_argument("--output-type", help="the head's type in the quantized file (default: llama-quantize's rule)")
    args = ap.parse_args()
    from checkpoint import load
    model, meta = load(args.checkpoint)
    desc = "trained by tools/train: %s" % json.dumps(meta.get("summary", {}), sort_keys=True)
    paths = export(model, args.out_dir, args.build, args.tokenizer_json, args.type, args.quantize, args.output_type,
                   name=meta.get("name", "tandem-policy"), description=desc)
    for k, v in paths.items():
        print("%s: %s" % (k, v))


if __name__ == "__main__":
    main()
