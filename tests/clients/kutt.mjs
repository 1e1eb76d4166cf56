// Drives a shortener node with Kutt's Node client (the `kutt` package on npm) through
// every method of it that the README says the Kutt API serves, checking the answers the
// client's types promise. Exits non-zero at the first answer that differs.
//
//   node kutt.mjs PACKAGE_FOLDER BASE_URL API_KEY OTHER_API_KEY
import assert from 'node:assert/strict';
import { pathToFileURL } from 'node:url';

const [folder, baseUrl, apiKey, otherKey] = process.argv.slice(2);
const { Kutt } = await import(pathToFileURL(`${folder}/node_modules/kutt/build/esm/index.js`));
const connect = (key) => new Kutt().set('api', `${baseUrl}/api/v2`).set('key', key);
const kutt = connect(apiKey);
let calls = 0;
const call = async (promise) => {
  calls += 1;
  return promise;
};
const refused = async (promise, status, pattern) => {
  calls += 1;
  await assert.rejects(promise, (error) => {
    assert.equal(error.cause?.status, status, error.message);
    assert.match(error.message, pattern);
    return true;
  });
};

assert.equal(await call(kutt.health().check()), true);

// Create with Kutt's options.
const made = await call(kutt.links().create({
  target: 'https://example.com/kutt/one',
  customurl: 'kutt-one',
  description: 'One',
  expire_in: '2 days',
}));
assert.equal(made.id, 'kutt-one');
assert.equal(made.address, 'kutt-one');
assert.equal(made.target, 'https://example.com/kutt/one');
assert.equal(made.description, 'One');
assert.equal(made.password, false);
assert.equal(made.visit_count, 0);
assert.ok(made.link.endsWith('/kutt-one'), made.link);
assert.ok(made.created_at instanceof Date && !Number.isNaN(made.created_at.getTime()));
const expires = Date.parse(made.expire_in) - Date.now();
assert.ok(expires > 47 * 3600e3 && expires <= 48 * 3600e3, made.expire_in);

// reuse answers the same link; a taken customurl and a bad target are refused, saying why.
const reused = await call(kutt.links().create({ target: 'https://example.com/kutt/one', reuse: true }));
assert.equal(reused.address, 'kutt-one');
await refused(kutt.links().create({ target: 'https://example.com/x', customurl: 'kutt-one' }), 409, /^customurl: /);
await refused(kutt.links().create({ target: 'nope' }), 400, /^target: /);
await refused(kutt.links().create({ target: 'https://example.com/x', expire_in: 'soon' }), 400, /^expire_in: /);
const locked = await call(kutt.links().create({ target: 'https://example.com/kutt/locked', password: 'a long secret' }));
assert.equal(locked.password, true);

// The list, newest first, with its total; skip and limit page it.
for (let index = 0; index < 4; index += 1) {
  await call(kutt.links().create({ target: `https://example.com/kutt/page/${index}` }));
}
const page = await call(kutt.links().list({ limit: 2, skip: 1 }));
assert.equal(page.total, 6);
assert.equal(page.limit, 2);
assert.equal(page.skip, 1);
assert.deepEqual(page.data.map((link) => link.target), [
  'https://example.com/kutt/page/2', 'https://example.com/kutt/page/1',
]);

// A visit is counted.
const visit = await fetch(`${baseUrl}/kutt-one`, { redirect: 'manual', headers: { 'user-agent': 'Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 Firefox/120.0' } });
assert.equal(visit.status, 302);
let count = 0;
for (let tries = 0; tries < 100 && count === 0; tries += 1) {
  const all = await call(kutt.links().list({ limit: 50 }));
  count = all.data.find((link) => link.address === 'kutt-one').visit_count;
  if (count === 0) await new Promise((resolve) => setTimeout(resolve, 100));
}
assert.equal(count, 1);

// Its stats, from the daily counts: today in the last day, week, month and year, with
// the visit's browser and system (written by the visit values' flush, every second here).
// Read with GET, as Kutt serves them: this client's `stats()` sends DELETE, which Kutt's
// own server does not route either.
await refused(kutt.links().stats(made.id), 405, /^method: /);
let stats;
for (let tries = 0; tries < 100; tries += 1) {
  calls += 1;
  const read = await fetch(`${baseUrl}/api/v2/links/${made.id}/stats`, { headers: { 'x-api-key': apiKey } });
  assert.equal(read.status, 200);
  stats = await read.json();
  if (stats.lastWeek.stats.browser.length > 0) break;
  await new Promise((resolve) => setTimeout(resolve, 100));
}
assert.equal(stats.address, 'kutt-one');
assert.equal(stats.lastDay.total, 1);
assert.deepEqual(stats.lastDay.views, [], 'no hours are made up');
assert.deepEqual(stats.lastWeek.views, [0, 0, 0, 0, 0, 0, 1]);
assert.equal(stats.lastMonth.views.length, 30);
assert.equal(stats.lastMonth.total, 1);
assert.equal(stats.lastYear.views.length, 12);
assert.equal(stats.lastYear.views[11], 1);
assert.deepEqual(stats.lastWeek.stats.browser, [{ name: 'firefox', value: 1 }]);
assert.deepEqual(stats.lastMonth.stats.os, [{ name: 'linux', value: 1 }]);
assert.deepEqual(stats.lastYear.stats.referrer, [{ name: 'direct', value: 1 }]);

// Edit by id, as Kutt's clients send it (the address they have, the fields to change).
const edited = await call(kutt.links().update(made.id, {
  address: 'kutt-one', target: 'https://example.com/kutt/edited', description: '',
}));
assert.equal(edited.target, 'https://example.com/kutt/edited');
assert.equal(edited.description, null);
await refused(kutt.links().update(made.id, { address: 'other', target: 'https://example.com/x' }), 400, /^address: /);
const followed = await fetch(`${baseUrl}/kutt-one`, { redirect: 'manual' });
assert.equal(followed.headers.get('location'), 'https://example.com/kutt/edited');

// Another key neither sees nor deletes it; an unknown key is refused.
assert.equal((await call(connect(otherKey).links().list())).total, 0);
await refused(connect(otherKey).links().remove(made.id), 404, /^id: /);
await refused(connect('not-a-key').links().list(), 401, /unknown API key/);

// Delete.
assert.match(await call(kutt.links().remove(made.id)), /deleted/);
await refused(kutt.links().remove(made.id), 404, /^id: /);
console.log(`kutt: ${calls} client calls answered as the client expects`);
