"""ember.onnx on word_language_model's shape (Embedding(1000, 64) -> 2-layer LSTM(64, 64) with
(h0, c0) inputs -> Linear(64, 1000); 35 steps, batch 4): ONNX nodes, file size, export time and
onnxruntime's latency (the best of ``--repeat`` rounds of 20 runs).

    python benchmarks/bench_onnx_recurrent.py [--repeat 5] [--ember CHECKOUT]

``--ember`` exports with another checkout's ember (one from before the recurrent rows unrolls
the time loop into the graph), to compare.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import time
import warnings

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def measure(repeat: int) -> dict:
    import onnx
    import onnxruntime

    import ember

    class WordLanguageModel(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder = ember.nn.Embedding(1000, 64)
            self.rnn = ember.nn.LSTM(64, 64, 2)
            self.decoder = ember.nn.Linear(64, 1000)

        def forward(self, x, hidden):
            out, hidden = self.rnn(self.encoder(x), hidden)
            return self.decoder(out), hidden

    ember.manual_seed(0)
    model = WordLanguageModel().eval()
    args = (ember.randint(0, 1000, (35, 4)), (ember.zeros(2, 4, 64), ember.zeros(2, 4, 64)))
    buffer = io.BytesIO()
    start = time.perf_counter()
    ember.onnx.export(model, args, buffer, input_names=["x", "h0", "c0"])
    export_s = time.perf_counter() - start
    data = buffer.getvalue()
    sess = onnxruntime.InferenceSession(data, providers=["CPUExecutionProvider"])
    feeds = {"x": args[0].numpy(), "h0": args[1][0].numpy(), "c0": args[1][1].numpy()}
    sess.run(None, feeds)
    rounds = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(20):
            sess.run(None, feeds)
        rounds.append((time.perf_counter() - start) / 20)
    return {
        "nodes": len(onnx.load_from_string(data).graph.node),
        "bytes": len(data),
        "export_s": export_s,
        "onnxruntime_ms": min(rounds) * 1e3,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--ember", default=ROOT, help="the checkout whose ember exports")
    options = parser.parse_args()
    sys.path.insert(0, os.path.abspath(options.ember))
    warnings.simplefilter("ignore")
    found = measure(options.repeat)
    print(
        f"{found['nodes']} nodes, {found['bytes'] / 1e3:.0f} kB, export {found['export_s']:.2f} s, "
        f"onnxruntime {found['onnxruntime_ms']:.2f} ms per run"
    )


if __name__ == "__main__":
    main()
