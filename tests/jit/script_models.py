"""Models and functions for tests/jit/test_script*.py, written once against a library (torch
or ember): both compile the same source with their jit.script."""
# ruff: noqa: UP006, UP035, UP045 - typing.List/Tuple/Optional, as TorchScript sources spell them

from typing import List, Optional, Tuple

from .script_constructs import constructs


def build(lib):
    nn = lib.nn
    F = lib.nn.functional

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(8, 16)
            self.fc2 = nn.Linear(16, 4)

        def forward(self, x):
            h = F.relu(self.fc1(x))
            return F.log_softmax(self.fc2(h), dim=1)

    class CNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 4, 3, 1)
            self.conv2 = nn.Conv2d(4, 8, 3, 1)
            self.dropout = nn.Dropout(0.25)
            self.fc = nn.Linear(8 * 5 * 5, 10)

        def forward(self, x):
            x = F.relu(self.conv1(x))
            x = F.max_pool2d(F.relu(self.conv2(x)), 2)
            x = self.dropout(x)
            x = lib.flatten(x, 1)
            return F.log_softmax(self.fc(x), dim=1)

    class LSTMLoop(nn.Module):
        def __init__(self, n_in: int = 3, hidden: int = 5):
            super().__init__()
            self.hidden = hidden
            self.ih = nn.Linear(n_in, 4 * hidden)
            self.hh = nn.Linear(hidden, 4 * hidden)

        def forward(self, xs, state: Optional[Tuple[lib.Tensor, lib.Tensor]] = None):
            if state is None:
                h = lib.zeros(xs.size(1), self.hidden)
                c = lib.zeros(xs.size(1), self.hidden)
            else:
                h, c = state
            outputs: List[lib.Tensor] = []
            for t in range(xs.size(0)):
                gates = self.ih(xs[t]) + self.hh(h)
                i, f, g, o = gates.chunk(4, 1)
                c = lib.sigmoid(f) * c + lib.sigmoid(i) * lib.tanh(g)
                h = lib.sigmoid(o) * lib.tanh(c)
                outputs.append(h)
            return lib.stack(outputs), (h, c)

    def data_dependent(x, y):
        if x.sum() > 0:
            z = x * y
        else:
            z = x - y
        k = 0
        while k < 3 and z.abs().max() < 100:
            z = z * 2
            k += 1
        return z, k

    return MLP, CNN, LSTMLoop, data_dependent


def functions(lib):
    """Functions covering the subset's control flow and types; each is scripted by ember and
    by torch from this same source, and run on inputs that take each path."""
    import math
    from typing import List, Optional, Tuple

    Tensor = lib.Tensor
    F = lib.nn.functional

    def early_return(x, limit: float):
        if x.sum() > limit:
            return x * 2
        elif x.sum() < -limit:
            return -x
        y = x + 1
        return y

    def break_continue(x, n: int):
        total = lib.zeros_like(x)
        for i in range(n):
            if i % 2 == 1:
                continue
            total = total + x * i
            if total.sum() > 20:
                break
        return total

    def ranges(x, start: int, stop: int):
        acc = x
        for i in range(start, stop, 2):
            acc = acc + i
        for j in range(stop, start, -3):
            acc = acc * 0.5 + j
        return acc

    def lists(xs: List[Tensor], scale: float):
        out: List[Tensor] = []
        for i, x in enumerate(xs):
            out.append(x * scale + i)
        squares = [x * x for x in out]
        total = squares[0]
        for a, b in zip(squares, out):
            total = total + a - b
        return lib.stack(out), total, len(xs)

    def optional(x, bias: Optional[Tensor] = None, times: int = 2):
        y = x
        if bias is not None:
            y = y + bias
        for _ in range(times):
            y = F.relu(y - 0.1)
        return y

    def helper(a, b: float):
        return lib.tanh(a) * b

    def calls(x):
        h = helper(x, 2.0)
        return helper(h, 0.5) + helper(x, 1.0)

    def tuples(x) -> Tuple[Tensor, Tensor]:
        a, b = x.chunk(2, 0)
        pair = (a.sum(0), b.sum(0))
        first, second = pair
        return second, first

    def scalars(x, n: int, f: float):
        m = n * 3 // 2 - 1
        g = f / 2 + m
        if n > 2 and f < 1.5:
            g = g * 2
        return x * g + float(m), int(g)

    def indexing(x):
        y = x[1:, :2]
        z = x[0]
        return y.sum(1) + z[:2] + x[-1, 1] + x[:, None].sum() + x[..., 1:3][1] + x[..., -1][:2]

    def ternary(x, flag: bool):
        y = x.relu() if flag else x.sigmoid()
        return y if not flag or y.sum() > 0 else -y

    def views(x):
        n = x.size(0)
        y = x.view(n, -1).transpose(0, 1).contiguous()
        return y.reshape(-1, 2), x.shape[1], x.dim()

    def scripting_flags(x):
        if lib.jit.is_scripting():
            return x + 1
        return x - 1

    def annotated(x):
        sizes = lib.jit.annotate(List[int], [])
        for i in range(x.dim()):
            sizes.append(x.size(i) * 2)
        return sizes

    def list_slices(xs: List[Tensor], emb):
        head = xs[:2]
        tail = xs[1:]
        total = xs[-1] * xs[0].sum().item()
        picked = F.embedding(lib.argmax(emb, 1), emb)
        return lib.stack(head).sum(0) + lib.stack(tail[::2]).sum(0) + total, len(tail), picked

    def attention_scale(q, k):
        scores = lib.matmul(q, k.transpose(-2, -1)) / math.sqrt(q.size(-1))
        return F.softmax(scores * math.pi / math.sqrt(4.0), dim=-1)

    def set_items(x):
        y = x.clone()
        y[0] = 5.0
        y[1:, 0] = x[1:, 1] * 2
        return y

    def while_break(x):
        steps = 0
        while True:
            x = x * 0.5
            steps += 1
            if x.abs().max() < 1:
                break
        return x, steps

    return {
        "branches": build(lib)[3],  # the data-dependent if/while of the acceptance programs
        "early_return": early_return,
        "break_continue": break_continue,
        "ranges": ranges,
        "lists": lists,
        "optional": optional,
        "calls": calls,
        "tuples": tuples,
        "scalars": scalars,
        "indexing": indexing,
        "ternary": ternary,
        "views": views,
        "scripting_flags": scripting_flags,
        "annotated": annotated,
        "while_break": while_break,
        "dict_ops": dicts(lib),
        "list_slices": list_slices,
        "set_items": set_items,
        "attention_scale": attention_scale,
        **constructs(lib),
    }


def features(lib):
    """A module using the module-level features: ModuleList/Sequential iteration, constants
    (``__constants__`` and ``Final``), an exported method, an ignored and an unused one."""
    nn = lib.nn

    class Blocks(nn.Module):
        __constants__ = ["depth"]
        scale: lib.jit.Final[float]

        def __init__(self):
            super().__init__()
            self.depth = 2
            self.scale = 0.5
            self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])
            self.seq = nn.Sequential(nn.Linear(4, 4), nn.Tanh())
            self.register_buffer("offset", lib.ones(4))

        def forward(self, x):
            for layer in self.layers:
                x = lib.relu(layer(x)) * self.scale
            for i, layer in enumerate(self.layers):
                if i < self.depth:
                    x = x + layer(x)
            if self.training:
                x = self.not_scriptable(x)
            return self.seq(x) + self.offset

        @lib.jit.export
        def double(self, x):
            return self.forward(x) * 2

        @lib.jit.unused
        def not_scriptable(self, x):
            with lib.no_grad():
                return x

    return Blocks


def errors(lib):
    """Functions outside the subset, or ill-typed: both compilers refuse them."""

    def try_block(x):
        try:
            y = x + 1
        except Exception:
            y = x
        return y

    def global_statement(x):
        global COUNTER
        return x

    def lambda_call(x):
        return (lambda a: a)(x)

    def undefined_name(x):
        return x + y  # noqa: F821 - the error under test

    def branch_types(x, n: int):
        if n > 0:
            z = x
        else:
            z = 1
        return z

    def bad_annotation(x: "NoSuchType"):  # noqa: F821 - the error under test
        return x

    def undefined_deep(x):  # the context: 2 lines either side of the underlined one
        a = x + 1
        b = a * 2
        c = b - 3
        d = c + z  # noqa: F821 - the error under test
        e = d + 1
        f = e * 2
        return f

    def unrolled_break(x):
        for y in (x, x + 1):  # a tuple loop is unrolled, as a ModuleList loop
            x = x + y
            if x.sum() > 0:
                break
        return x

    def unrolled_continue(x):
        for y in (x, x + 1):
            if x.sum() > 0:
                continue
            x = x + y
        return x

    def set_literal(x):
        s = {1, 2}
        return x + len(s)

    def yield_statement(x):
        yield x

    def walrus(x):
        if (n := 3) > 2:
            return x * n
        return x

    def set_comprehension(x):
        s = {i for i in range(3)}
        return x + len(s)

    def star_args(x, *args):
        return x

    def star_kwargs(x, **kwargs):
        return x

    def keyword_only_default(x, *, k: int = 1):
        return x

    return {
        "set_literal": set_literal,
        "yield_statement": yield_statement,
        "walrus": walrus,
        "set_comprehension": set_comprehension,
        "star_args": star_args,
        "star_kwargs": star_kwargs,
        "keyword_only_default": keyword_only_default,
        "try_block": try_block,
        "global_statement": global_statement,
        "lambda_call": lambda_call,
        "undefined_name": undefined_name,
        "branch_types": branch_types,
        "bad_annotation": bad_annotation,
        "undefined_deep": undefined_deep,
        "unrolled_break": unrolled_break,
        "unrolled_continue": unrolled_continue,
    }


def dicts(lib):
    """Dict types: literals, annotations, indexing, assignment, iteration, ``in``, ``get``."""
    from typing import Dict, List

    Tensor = lib.Tensor

    def dict_ops(x, weights: Dict[str, float]):
        scaled: Dict[str, Tensor] = {}
        for name, w in weights.items():
            scaled[name] = x * w
        total = x * 0
        for key in scaled:
            total = total + scaled[key]
        if "bias" in weights:
            total = total + weights["bias"]
        names: List[str] = scaled.keys()
        return total, len(names), weights.get("missing", 2.5)

    return dict_ops


def recurrent(lib, kind: str):
    """word_language_model's shape: embedding, a 2-layer recurrent net, a decoder."""
    from typing import Tuple

    Tensor = lib.Tensor
    nn = lib.nn

    class LanguageModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder = nn.Embedding(20, 8)
            self.rnn = getattr(nn, kind)(8, 12, num_layers=2, batch_first=True)
            self.decoder = nn.Linear(12, 20)

        def forward(self, tokens, hidden: Tuple[Tensor, Tensor]):
            out, state = self.rnn(self.encoder(tokens), hidden)
            return self.decoder(out), state

    class Plain(nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder = nn.Embedding(20, 8)
            self.rnn = getattr(nn, kind)(8, 12, num_layers=2, batch_first=True)
            self.decoder = nn.Linear(12, 20)

        def forward(self, tokens, hidden):
            out, state = self.rnn(self.encoder(tokens), hidden)
            return self.decoder(out), state

    return (LanguageModel if kind == "LSTM" else Plain)().eval()


def transformer(lib):
    """A TransformerEncoder with a head, masks passed through (PyTorch's own layers)."""
    from typing import Optional

    Tensor = lib.Tensor
    nn = lib.nn

    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            layer = nn.TransformerEncoderLayer(16, 4, dim_feedforward=32, batch_first=True)
            self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
            self.head = nn.Linear(16, 4)

        def forward(self, x, mask: Optional[Tensor] = None, padding: Optional[Tensor] = None):
            return self.head(self.encoder(x, mask=mask, src_key_padding_mask=padding))

    return Encoder().eval()
