"""GET /v1/runs is paged (issue 22, item 3): 100,000 runs in one answer were
13 MB, and the web view refetched them every 5 s.  A run's ranks in
GET /v1/runs/{run} (and /ranks) are the first 1000 with a summary of all
(100,000 ranks were 9.5 MB).  A page holds at most
`limit` runs (1000 by default, 10000 at most), `next` is the cursor of the
page after (null on the last), `total` counts every run and `matching`
those whose name holds `q`; `order=trouble` puts runs with open alerts
first (the web view's first page)."""
import http.client
import json
import unittest
import urllib.parse

from gwtest import Daemon

N = 2500


def conditional_get(d, path, etag=None):
    """GET with If-None-Match: (status, ETag header, body bytes)."""
    c = http.client.HTTPConnection('127.0.0.1', d.http_port, timeout=30)
    try:
        c.request('GET', path, headers={'If-None-Match': etag} if etag else {})
        r = c.getresponse()
        return r.status, r.getheader('ETag'), r.read()
    finally:
        c.close()


class Conditional(unittest.TestCase):
    """Item 3's conditional request: a page that did not change is answered
    304 without a body when the client names the ETag it has (the web view
    polls its runs page every few seconds)."""

    def test_unchanged_page_is_304_changed_page_is_200(self):
        with Daemon() as d:
            body = ''.join(json.dumps({'run': 'c-%03d' % i, 'step': 1, 'loss': 1.0}) + '\n'
                           for i in range(300))
            self.assertEqual(d.post('/v1/ingest', body.encode())[0], 200)
            path = '/v1/runs?order=trouble&limit=200'
            st, etag, full = conditional_get(d, path)
            self.assertEqual(st, 200)
            self.assertTrue(etag and etag.startswith('"') and etag.endswith('"'), etag)
            self.assertGreater(len(full), 10000)
            # nothing changed: headers only, the same tag
            st, again, b = conditional_get(d, path, etag)
            self.assertEqual((st, again, b), (304, etag, b''))
            # a list of tags, a weak one among them, matches too
            st, _, b = conditional_get(d, path, 'W/"0000000000000000", W/' + etag)
            self.assertEqual((st, b), (304, b''))
            # another tag, or none: the whole answer
            st, _, b = conditional_get(d, path, '"0000000000000000"')
            self.assertEqual((st, b), (200, full))
            # a new record changes the page: 200 and a new tag
            self.assertEqual(d.post('/v1/ingest', b'{"run":"c-000","step":2,"loss":0.5}\n')[0],
                             200)
            st, new, b = conditional_get(d, path, etag)
            self.assertEqual(st, 200)
            self.assertNotEqual(new, etag)
            self.assertIn(b'"c-000"', b)


class RunsPaging(unittest.TestCase):
    def test_pages_cover_every_run_once_in_order(self):
        with Daemon() as d:
            body = ''.join(json.dumps({'run': 'r-%04d' % i, 'step': 1, 'loss': 1.0}) + '\n'
                           for i in range(N))
            self.assertEqual(d.post('/v1/ingest', body.encode())[0], 200)
            # a run with an open alert, older than all of them
            st, _ = d.post('/v1/ingest', b'{"run":"bad","step":1,"loss":1}\n'
                                         b'{"run":"bad","step":2,"loss":NaN}\n')
            self.assertEqual(st, 200)
            body = ''.join(json.dumps({'run': 'r-%04d' % i, 'step': 2, 'loss': 1.0}) + '\n'
                           for i in range(N))
            self.assertEqual(d.post('/v1/ingest', body.encode())[0], 200)
            st, first = d.get('/v1/runs')
            self.assertEqual(st, 200)
            self.assertEqual(len(first['runs']), 1000)
            self.assertEqual((first['total'], first['matching']), (N + 1, N + 1))
            seen, page, pages = [], first, 0
            while True:
                pages += 1
                seen += page['runs']
                if page['next'] is None:
                    break
                st, page = d.get('/v1/runs?limit=1000&cursor=' +
                                 urllib.parse.quote(page['next'], safe=''))
                self.assertEqual(st, 200, page)
            self.assertEqual(pages, 3)
            names = [r['run'] for r in seen]
            self.assertEqual(len(names), N + 1)
            self.assertEqual(len(set(names)), N + 1)
            # most recent first (no gap, no repeat: the counts above); the
            # writer stamps each row as it comes, so runs of one request
            # differ below the printed precision and their names need not
            # sort: only the order of the times is checked
            seen_at = [r['last_seen'] for r in seen]
            self.assertEqual(seen_at, sorted(seen_at, reverse=True))
            self.assertEqual(names[-1], 'bad')
            # the web view's first page: trouble first, a part of a name
            st, t = d.get('/v1/runs?order=trouble&limit=5')
            self.assertEqual([r['run'] for r in t['runs']][0], 'bad')
            self.assertGreater(t['runs'][0]['open_alerts'], 0)
            st, q = d.get('/v1/runs?q=R-012&limit=5')
            self.assertEqual((len(q['runs']), q['matching'], q['total']), (5, 10, N + 1))
            self.assertTrue(all('r-012' in r['run'] for r in q['runs']))
            # the bounds, named
            for bad in ('limit=0', 'limit=10001', 'limit=x', 'cursor=nonsense', 'order=name',
                        'order=trouble&cursor=1%20r-0001'):
                st, e = d.get('/v1/runs?' + bad)
                self.assertEqual(st, 400, bad)
                self.assertIn('bad query parameter', e['error'])


class RanksCapped(unittest.TestCase):
    def test_the_first_1000_ranks_and_a_summary_of_all(self):
        with Daemon() as d:
            body = ''.join(json.dumps({'run': 'rk', 'step': s, 'loss': 1.0, 'rank': k}) + '\n'
                           for k in range(1500) for s in (1, 2) if not (k == 1234 and s == 2))
            self.assertEqual(d.post('/v1/ingest', body.encode())[0], 200)
            for path in ('/v1/runs/rk', '/v1/runs/rk/ranks'):
                st, j = d.get(path)
                self.assertEqual(st, 200)
                self.assertEqual([k['rank'] for k in j['ranks']], list(range(1, 1001)), path)
                summ = j['ranks_summary']
                self.assertEqual((summ['count'], summ['max_rank']), (1499, 1499), path)
                self.assertEqual((summ['behind']['rank'], summ['behind']['last_step']), (1234, 1))


if __name__ == '__main__':
    unittest.main()
