"""Write detectors/registry.c with one more row: the test detector.

docs/detectors.md, "Adding a detector", step 3 puts a detector in the
registry: an extern line and its place in gw_det_registry.  test_detector
(tests/unit/test_detector.c) does exactly that for a detector of the tests
(det_example.c) without changing the shipped registry: this writes the
real registry.c with the extern line after the last one and the row last,
before its NULL, and the test is linked with that instead of the library's.

Usage: with_test_detector.py REGISTRY_C OUT_C SYMBOL
Fails, naming what it did not find, when registry.c no longer has the
shape it edits.
"""
import sys


def main(src, out, sym):
    text = open(src, encoding='utf-8').read()
    lines = text.split('\n')
    externs = [i for i, l in enumerate(lines)
               if l.startswith('extern const struct gw_detector ') and l.endswith(';')]
    if not externs:
        sys.exit('%s: no line "extern const struct gw_detector ...;" to add %s after'
                 % (src, sym))
    start = next((i for i, l in enumerate(lines)
                  if l.startswith('const struct gw_detector *const gw_det_registry[]')), None)
    if start is None:
        sys.exit('%s: no "const struct gw_detector *const gw_det_registry[]" array' % src)
    end = next((i for i in range(start, len(lines)) if lines[i].strip() == 'NULL,'), None)
    if end is None or lines[end + 1].strip() != '};':
        sys.exit('%s: gw_det_registry (line %d) does not end in "NULL," then "};"'
                 % (src, start + 1))
    lines.insert(end, '\t&%s,' % sym)
    lines.insert(externs[-1] + 1, 'extern const struct gw_detector %s;' % sym)
    head = ('/* Written by tests/unit/with_test_detector.py from detectors/registry.c:\n'
            ' * the shipped registry with %s as its last row. */\n' % sym)
    with open(out, 'w', encoding='utf-8') as f:
        f.write(head + '\n'.join(lines))


if __name__ == '__main__':
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    main(*sys.argv[1:])
