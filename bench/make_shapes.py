"""make_shapes.py TRACE OUTDIR NAME...: the trace (an NDJSON trace of the
dev corpus) printed as the logs of other frameworks (tests/integration/
logshapes.py), one file per shape NAME (OUTDIR/NAME.log), for
bench_readers: no real log of these formats is in ../shared/realworld."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'tests',
                                'integration'))
import logshapes  # noqa: E402

trace = logshapes.points(sys.argv[1])
for name in sys.argv[3:]:
    with open(os.path.join(sys.argv[2], name + '.log'), 'wb') as f:
        f.write(logshapes.SHAPES[name][1](trace))
