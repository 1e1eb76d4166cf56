// Drives a shortener node with Shlink's own JS SDK (@shlinkio/shlink-js-sdk), as
// Shlink's web client and the Raycast extension do: every method the README says the
// Shlink API serves, with the answers the SDK's types promise. Exits non-zero at the
// first answer that differs, printing what was expected.
//
//   node shlink-sdk.mjs SDK_FOLDER BASE_URL API_KEY OTHER_API_KEY
import assert from 'node:assert/strict';
import { pathToFileURL } from 'node:url';

const [sdkFolder, baseUrl, apiKey, otherKey] = process.argv.slice(2);
const dist = `${sdkFolder}/node_modules/@shlinkio/shlink-js-sdk/dist`;
const { ShlinkApiClient } = await import(pathToFileURL(`${dist}/index.js`));
const { FetchHttpClient } = await import(pathToFileURL(`${dist}/fetch.js`));
const connect = (key) => new ShlinkApiClient(new FetchHttpClient(), { baseUrl, apiKey: key });
const client = connect(apiKey);
const errorType = (name) => `https://shlink.io/api/error/${name}`;
let calls = 0;
const call = async (promise) => {
  calls += 1;
  return promise;
};
const refused = async (promise, check) => {
  calls += 1;
  await assert.rejects(promise, (error) => {
    check(error);
    return true;
  });
};

// Health, and the version the web client enables its screens by.
const health = await call(client.health());
assert.equal(health.status, 'pass');
assert.match(health.version, /^4\.3\.\d+$/);

// Create with every option Shlink has and this service serves.
const until = '2099-01-01T00:00:00+00:00';
const created = await call(client.createShortUrl({
  longUrl: 'https://example.com/sdk/one',
  customSlug: 'sdk-one',
  tags: ['sdk', 'one'],
  title: 'One',
  maxVisits: 5,
  validUntil: until,
  crawlable: true,
  forwardQuery: true,
}));
assert.equal(created.shortCode, 'sdk-one');
assert.ok(created.shortUrl.endsWith('/sdk-one'), created.shortUrl);
assert.equal(created.longUrl, 'https://example.com/sdk/one');
assert.deepEqual(created.tags, ['one', 'sdk'], 'stored in order');
assert.equal(created.title, 'One');
assert.deepEqual(created.meta, { validSince: null, validUntil: until, maxVisits: 5 });
assert.equal(created.crawlable, true);
assert.equal(created.forwardQuery, true);
assert.equal(created.domain, null);
assert.equal(created.hasRedirectRules, false);
assert.deepEqual(created.visitsSummary, { total: 0, nonBots: 0, bots: 0 });
assert.ok(!Number.isNaN(Date.parse(created.dateCreated)), created.dateCreated);

// findIfExists answers the same link; another slug with a taken name is Shlink's error.
const found = await call(client.createShortUrl({
  longUrl: 'https://example.com/sdk/one',
  tags: ['sdk', 'one'],
  title: 'One',
  maxVisits: 5,
  validUntil: until,
  crawlable: true,
  forwardQuery: true,
  findIfExists: true,
}));
assert.equal(found.shortCode, 'sdk-one');
await refused(client.createShortUrl({ longUrl: 'https://example.com/x', customSlug: 'sdk-one' }), (error) => {
  assert.equal(error.type, errorType('non-unique-slug'));
  assert.equal(error.status, 400);
});
await refused(client.createShortUrl({ longUrl: 'not a url' }), (error) => {
  assert.equal(error.type, errorType('invalid-data'));
  assert.deepEqual(error.invalidElements, ['longUrl']);
  assert.match(error.detail, /^longUrl: /);
});

// A list paged by number, filtered by tag, search and domain.
for (let index = 0; index < 12; index += 1) {
  await call(client.createShortUrl({ longUrl: `https://example.com/sdk/page/${index}`, tags: ['paged'] }));
}
const first = await call(client.listShortUrls({ itemsPerPage: 5, tags: ['paged'] }));
assert.deepEqual(first.pagination, {
  currentPage: 1, pagesCount: 3, itemsPerPage: 5, itemsInCurrentPage: 5, totalItems: 12,
});
assert.equal(first.data[0].longUrl, 'https://example.com/sdk/page/11', 'newest first');
const last = await call(client.listShortUrls({ page: '3', itemsPerPage: 5, tags: ['paged'], tagsMode: 'all' }));
assert.deepEqual(last.data.map((url) => url.longUrl), [
  'https://example.com/sdk/page/1', 'https://example.com/sdk/page/0',
]);
const searched = await call(client.listShortUrls({ searchTerm: 'SDK/ONE' }));
assert.deepEqual(searched.data.map((url) => url.shortCode), ['sdk-one']);
const everything = await call(client.listShortUrls({ domain: 'DEFAULT', orderBy: { field: 'dateCreated', dir: 'DESC' } }));
assert.equal(everything.pagination.totalItems, 13);
await refused(client.listShortUrls({ orderBy: { field: 'visits', dir: 'DESC' } }), (error) => {
  assert.equal(error.status, 400);
  assert.deepEqual(error.invalidElements, ['orderBy']);
});
// Any of the tags, a creation range, and live links only.
const anyTag = await call(client.listShortUrls({ tags: ['one', 'paged'], tagsMode: 'any', itemsPerPage: 50 }));
assert.equal(anyTag.pagination.totalItems, 13);
assert.equal((await call(client.listShortUrls({ tags: ['one', 'paged'], tagsMode: 'all' }))).pagination.totalItems, 0);
assert.equal((await call(client.listShortUrls({ startDate: '2099-01-01T00:00:00+00:00' }))).pagination.totalItems, 0);
assert.equal((await call(client.listShortUrls({ endDate: '2000-01-01T00:00:00+00:00' }))).pagination.totalItems, 0);
const since = await call(client.listShortUrls({ startDate: '2000-01-01T00:00:00+00:00', endDate: '2099-01-01T00:00:00+00:00' }));
assert.equal(since.pagination.totalItems, 13);
await refused(client.listShortUrls({ startDate: 'yesterday' }), (error) => {
  assert.equal(error.status, 400);
  assert.deepEqual(error.invalidElements, ['startDate']);
});
await call(client.createShortUrl({ longUrl: 'https://example.com/sdk/once', customSlug: 'sdk-once', maxVisits: 1 }));
const soon = new Date(Date.now() + 1500).toISOString();
await call(client.createShortUrl({ longUrl: 'https://example.com/sdk/soon', customSlug: 'sdk-soon', validUntil: soon }));
assert.equal((await fetch(`${baseUrl}/sdk-once`, { redirect: 'manual' })).status, 302);
await new Promise((resolve) => setTimeout(resolve, 1600));
const live = (options) => call(client.listShortUrls({ searchTerm: 'sdk/', itemsPerPage: 50, ...options }))
  .then((list) => list.data.map((url) => url.shortCode).filter((code) => ['sdk-once', 'sdk-soon'].includes(code)).sort());
assert.deepEqual(await live({}), ['sdk-once', 'sdk-soon']);
assert.deepEqual(await live({ excludeMaxVisitsReached: true }), ['sdk-soon']);
assert.deepEqual(await live({ excludePastValidUntil: true }), ['sdk-once']);
await call(client.deleteShortUrl({ shortCode: 'sdk-once' }));
await call(client.deleteShortUrl({ shortCode: 'sdk-soon' }));

// Get, and visits counted as Shlink counts them: people and bots apart.
for (const agent of ['Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 Firefox/120.0', 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36', 'Googlebot/2.1 (+http://www.google.com/bot.html)']) {
  const visit = await fetch(`${baseUrl}/sdk-one`, { redirect: 'manual', headers: { 'user-agent': agent } });
  assert.equal(visit.status, 302);
}
let summary;
for (let tries = 0; tries < 100; tries += 1) {
  summary = (await call(client.getShortUrl({ shortCode: 'sdk-one' }))).visitsSummary;
  if (summary.total === 3) break;
  await new Promise((resolve) => setTimeout(resolve, 100));
}
assert.deepEqual(summary, { total: 3, nonBots: 2, bots: 1 });
// Ordered by people's visits: the one visited link first, or last.
const most = await call(client.listShortUrls({ itemsPerPage: 20, orderBy: { field: 'nonBotVisits', dir: 'DESC' } }));
assert.equal(most.data[0].shortCode, 'sdk-one');
const fewest = await call(client.listShortUrls({ itemsPerPage: 20, orderBy: { field: 'nonBotVisits', dir: 'ASC' } }));
assert.equal(fewest.data.at(-1).shortCode, 'sdk-one');
assert.equal(fewest.data[0].longUrl, 'https://example.com/sdk/page/11', 'ties newest first');
const oldest = await call(client.listShortUrls({ itemsPerPage: 2, orderBy: { field: 'dateCreated', dir: 'ASC' } }));
assert.equal(oldest.data[0].shortCode, 'sdk-one');
const tagStats = await call(client.tagsStats());
const sdkTag = tagStats.data.find((stats) => stats.tag === 'sdk');
assert.equal(sdkTag.shortUrlsCount, 1);
assert.deepEqual(sdkTag.visitsSummary, { total: 3, nonBots: 2, bots: 1 });
assert.equal(tagStats.data.find((stats) => stats.tag === 'paged').shortUrlsCount, 12);
const overview = await call(client.getVisitsOverview());
assert.deepEqual(overview.nonOrphanVisits, { total: 3, nonBots: 2, bots: 1 });
assert.deepEqual(overview.orphanVisits, { total: 0, nonBots: 0, bots: 0 });

// Edit: a merge patch, null clearing.
const edited = await call(client.updateShortUrl({ shortCode: 'sdk-one' }, {
  longUrl: 'https://example.com/sdk/edited',
  title: null,
  tags: ['edited'],
  maxVisits: null,
  validUntil: null,
  crawlable: false,
}));
assert.equal(edited.longUrl, 'https://example.com/sdk/edited');
assert.equal(edited.title, null);
assert.deepEqual(edited.tags, ['edited']);
assert.deepEqual(edited.meta, { validSince: null, validUntil: null, maxVisits: null });
assert.equal(edited.crawlable, false);
const followed = await fetch(`${baseUrl}/sdk-one`, { redirect: 'manual' });
assert.equal(followed.headers.get('location'), 'https://example.com/sdk/edited');

// Tags: listed, renamed (Shlink refuses a name in use, and an unknown one), deleted.
assert.deepEqual((await call(client.listTags())).data, ['edited', 'paged']);
await call(client.editTag({ oldName: 'edited', newName: 'renamed' }));
await refused(client.editTag({ oldName: 'renamed', newName: 'paged' }), (error) => {
  assert.equal(error.type, errorType('tag-conflict'));
  assert.equal(error.status, 409);
});
await refused(client.editTag({ oldName: 'absent', newName: 'other' }), (error) => {
  assert.equal(error.type, errorType('tag-not-found'));
  assert.equal(error.status, 404);
});
assert.deepEqual((await call(client.getShortUrl({ shortCode: 'sdk-one' }))).tags, ['renamed']);
await call(client.deleteTags(['renamed']));
assert.deepEqual((await call(client.listTags())).data, ['paged']);
assert.deepEqual((await call(client.getShortUrl({ shortCode: 'sdk-one' }))).tags, []);

// Domains.

const domains = await call(client.listDomains());
assert.equal(domains.data.length, 1);
assert.equal(domains.data[0].isDefault, true);
assert.deepEqual(domains.defaultRedirects, {
  baseUrlRedirect: null, regular404Redirect: null, invalidShortUrlRedirect: null,
});

// Redirect rules, read and replaced as Shlink's web client does, and followed by visits.
const noRules = await call(client.getShortUrlRedirectRules({ shortCode: 'sdk-one' }));
assert.deepEqual(noRules.redirectRules, []);
assert.equal(noRules.defaultLongUrl, (await call(client.getShortUrl({ shortCode: 'sdk-one' }))).longUrl);
const setRules = await call(client.setShortUrlRedirectRules({ shortCode: 'sdk-one' }, {
  redirectRules: [
    { longUrl: 'https://example.com/sdk/android', conditions: [{ type: 'device', matchKey: null, matchValue: 'android' }] },
    { longUrl: 'https://example.com/sdk/mail', conditions: [
      { type: 'query-param', matchKey: 'ref', matchValue: 'mail' },
      { type: 'language', matchKey: null, matchValue: 'fr' }] },
  ],
}));
assert.deepEqual(setRules.redirectRules.map((rule) => [rule.priority, rule.longUrl]), [
  [1, 'https://example.com/sdk/android'], [2, 'https://example.com/sdk/mail'],
]);
assert.deepEqual(setRules.redirectRules[1].conditions, [
  { type: 'query-param', matchKey: 'ref', matchValue: 'mail' },
  { type: 'language', matchKey: null, matchValue: 'fr' },
]);
assert.deepEqual((await call(client.getShortUrlRedirectRules({ shortCode: 'sdk-one' }))).redirectRules, setRules.redirectRules);
assert.equal((await call(client.getShortUrl({ shortCode: 'sdk-one' }))).hasRedirectRules, true);
const android = await fetch(`${baseUrl}/sdk-one`, { redirect: 'manual', headers: {
  'user-agent': 'Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Mobile Safari/537.36' } });
assert.equal(android.headers.get('location'), 'https://example.com/sdk/android');
const mailed = await fetch(`${baseUrl}/sdk-one?ref=mail`, { redirect: 'manual', headers: { 'accept-language': 'fr-CH, fr;q=0.9' } });
assert.match(mailed.headers.get('location'), /^https:\/\/example\.com\/sdk\/mail/);
await refused(client.setShortUrlRedirectRules({ shortCode: 'sdk-one' }, {
  redirectRules: [{ longUrl: 'https://example.com/x', conditions: [{ type: 'device', matchKey: null, matchValue: 'toaster' }] }],
}), (error) => {
  assert.equal(error.type, errorType('invalid-data'));
  assert.deepEqual(error.invalidElements, ['redirectRules[0].conditions[0].matchValue']);
});
await refused(client.setShortUrlRedirectRules({ shortCode: 'sdk-one' }, {
  redirectRules: [{ longUrl: 'https://example.com/x', conditions: [{ type: 'geolocation-city-name', matchKey: null, matchValue: 'Madrid' }] }],
}), (error) => {
  assert.equal(error.status, 400);
  assert.match(error.detail, /^redirectRules\[0\]: a condition of type `geolocation-city-name` is not supported/);
});
const cleared = await call(client.setShortUrlRedirectRules({ shortCode: 'sdk-one' }, { redirectRules: [] }));
assert.deepEqual(cleared.redirectRules, []);
assert.equal((await call(client.getShortUrl({ shortCode: 'sdk-one' }))).hasRedirectRules, false);
// A split made through this service's API has no form in Shlink's rules: said, not hidden.
const split = await fetch(`${baseUrl}/api/v1/links`, { method: 'POST', headers: { 'x-api-key': apiKey, 'content-type': 'application/json' },
  body: JSON.stringify({ url: 'https://example.com/sdk/split', alias: 'sdk-split', rules: [
    { split: [{ url: 'https://a.example/', weight: 1 }, { url: 'https://b.example/', weight: 1 }] }] }) });
assert.equal(split.status, 201);
await refused(client.getShortUrlRedirectRules({ shortCode: 'sdk-split' }), (error) => {
  assert.equal(error.status, 501);
  assert.match(error.detail, /^redirectRules\[0\]: a split has no form in Shlink's rules/);
});
await call(client.deleteShortUrl({ shortCode: 'sdk-split' }));

// Per-visit lists are refused, saying why.
await refused(client.getShortUrlVisits({ shortCode: 'sdk-one' }), (error) => {
  assert.equal(error.status, 501);
  assert.match(error.detail, /daily counts/);
});

// Another key sees none of it; an unknown key is Shlink's invalid-api-key.
await refused(connect(otherKey).getShortUrl({ shortCode: 'sdk-one' }), (error) => {
  assert.equal(error.type, errorType('short-url-not-found'));
  assert.equal(error.status, 404);
});
assert.equal((await call(connect(otherKey).listShortUrls())).pagination.totalItems, 0);
await refused(connect('not-a-key').listTags(), (error) => {
  assert.equal(error.type, errorType('invalid-api-key'));
  assert.equal(error.status, 401);
});

// Delete.
await call(client.deleteShortUrl({ shortCode: 'sdk-one' }));
await refused(client.getShortUrl({ shortCode: 'sdk-one' }), (error) => {
  assert.equal(error.type, errorType('short-url-not-found'));
});
console.log(`shlink-sdk: ${calls} SDK calls answered as the SDK expects`);
