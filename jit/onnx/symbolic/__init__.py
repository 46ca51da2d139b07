"""The ONNX rules of each op family; ``jit.onnx.table`` joins their tables."""
