import warnings, sys
import ember, ember.jit
from tests.jit.zoo import CASES
from ember.jit import pytree
def flat(o): return pytree.flatten(o)[0]
for name, case in CASES.items():
    if len(sys.argv) > 1 and name not in sys.argv[1:]: continue
    try:
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter('always')
            t = ember.jit.trace(case.model, case.example)
        print(name, len(list(t.graph.nodes())), [str(x.message)[:80] for x in w])
        for args in [case.example] + case.others:
            a = flat(t(*args)); b = flat(case.model(*args))
            print('   ', [float((x-y).abs().max()) for x, y in zip(a, b)])
    except Exception as e:
        import traceback; traceback.print_exc()
