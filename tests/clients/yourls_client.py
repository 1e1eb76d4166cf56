"""Drives a shortener node with the `yourls` client from PyPI (the YOURLS API client
that scripts and tools use): shorten, expand, url-stats, stats and db-stats, with a
signature and with username and password. Exits non-zero at the first answer that
differs from what the client's types promise.

    python yourls_client.py BASE_URL KEY_NAME KEY OTHER_KEY
"""
import sys
import time

import requests
import yourls

base, name, key, other_key = sys.argv[1:5]
api = f"{base}/yourls-api.php"
calls = 0


def call(result):
    global calls
    calls += 1
    return result


signed = yourls.YOURLSClient(api, signature=key)
logged_in = yourls.YOURLSClient(api, username=name, password=key)

one = call(signed.shorten("https://example.com/yourls/one", keyword="yourls-one", title="One"))
assert one.shorturl.endswith("/yourls-one"), one
assert one.url == "https://example.com/yourls/one", one
assert one.title == "One", one
assert one.keyword == "yourls-one", one
assert abs(time.time() - one.date.timestamp() + time.timezone) < 3600 * 25, one.date

try:
    call(signed.shorten("https://example.com/x", keyword="yourls-one"))
    raise AssertionError("a taken keyword was accepted")
except yourls.YOURLSKeywordExistsError as error:
    assert error.keyword == "yourls-one", error
try:
    call(signed.shorten("not a url"))
    raise AssertionError("a bad URL was accepted")
except yourls.YOURLSNoURLError as error:
    assert str(error).startswith("url: "), error

assert call(logged_in.expand("yourls-one")) == "https://example.com/yourls/one"
assert call(logged_in.expand(one.shorturl)) == "https://example.com/yourls/one"

for index in range(3):
    call(signed.shorten(f"https://example.com/yourls/page/{index}"))
visit = requests.get(f"{base}/yourls-one", allow_redirects=False,
                     headers={"user-agent": "Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 Firefox/120.0"})
assert visit.status_code == 302, visit.status_code
clicks = 0
for _ in range(100):
    clicks = call(signed.url_stats("yourls-one")).clicks
    if clicks == 1:
        break
    time.sleep(0.1)
assert clicks == 1, clicks

# Totals are read from storage, where visits land with the next flush (a second).
for _ in range(100):
    if call(logged_in.db_stats()).total_clicks == 1:
        break
    time.sleep(0.1)
links, stats = call(signed.stats("last", limit=2))
assert [link.url for link in links] == [
    "https://example.com/yourls/page/2", "https://example.com/yourls/page/1"], links
assert (stats.total_links, stats.total_clicks) == (4, 1), stats
db = call(logged_in.db_stats())
assert (db.total_links, db.total_clicks) == (4, 1), db
# The one visited link is on top, and at the bottom of the bottom's reverse.
top, _ = call(signed.stats("top", limit=2))
assert top[0].shorturl.endswith("/yourls-one") and top[0].clicks == 1, top
bottom, _ = call(signed.stats("bottom", limit=4))
assert bottom[-1].shorturl.endswith("/yourls-one"), bottom
assert [link.clicks for link in bottom] == [0, 0, 0, 1], bottom
try:
    call(signed.stats("rand", limit=2))
    raise AssertionError("filter=rand was accepted")
except yourls.YOURLSHTTPError as error:
    assert "filter" in str(error), error

# Another key sees none of these; a wrong password and an unknown signature are refused.
other = yourls.YOURLSClient(api, signature=other_key)
assert call(other.db_stats()).total_links == 0
for refused in (yourls.YOURLSClient(api, username=name, password="wrong"),
                yourls.YOURLSClient(api, username="someone-else", password=key),
                yourls.YOURLSClient(api, signature="wrong")):
    try:
        call(refused.db_stats())
        raise AssertionError("a bad login was accepted")
    except yourls.YOURLSHTTPError as error:
        assert error.response.status_code == 403, error.response.status_code

print(f"yourls: {calls} client calls answered as the client expects")
