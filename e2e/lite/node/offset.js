// Drives lite subscriptions' OffsetOption with the official Node.js client
// (rocketmq-client-nodejs 1.0.8): subscribeLite(liteTopic, option) starts a
// new subscription at an offset (ofOffset), at the end (MAX_OFFSET), and N
// messages before the group's position (ofTailN).
// Usage: ENDPOINT=127.0.0.1:8081 LITE_TOPIC=L node offset.js. Prints one
// JSON line per step; exits non-zero on the first failure.
'use strict';

const { Producer, LitePushConsumerBuilder, ConsumeResult, OffsetOption } = require('rocketmq-client-nodejs');

const endpoint = process.env.ENDPOINT;
const parent = process.env.LITE_TOPIC;
const quiet = { info() {}, warn() {}, error() {}, debug() {}, close() {} };
const base = { endpoints: endpoint, namespace: '', logger: quiet, requestTimeout: 5000 };

function step(name, data) { console.log(JSON.stringify({ step: name, ...data })); }
function fail(msg) { throw new Error(msg); }
const sleep = ms => new Promise(r => setTimeout(r, ms));

async function until(what, ms, fn) {
  const deadline = Date.now() + ms;
  while (!(await fn())) {
    if (Date.now() > deadline) fail(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

async function consumer(group, got) {
  const c = await new LitePushConsumerBuilder()
    .setClientConfiguration(base)
    .setConsumerGroup(group)
    .bindTopic(parent)
    .setMessageListener({ consume(m) { got.push(m.body.toString()); return ConsumeResult.SUCCESS; } })
    .build();
  // build() starts a COMPLETE_ADD of the empty set without waiting; a
  // subscribeLite that overtakes it is undone by it.
  await sleep(2000);
  return c;
}

// settle waits until got has n entries and a little more, then checks it.
async function settle(what, got, want) {
  await until(what, 30000, () => got.length >= want.length);
  await sleep(1000);
  if (got.join(' ') !== want.join(' ')) fail(`${what}: got ${got.join(' ')}, want ${want.join(' ')}`);
}

async function main() {
  const producer = new Producer({ ...base, topics: [parent] });
  await producer.startup();
  const send = body => producer.send({ topic: parent, liteTopic: 'o1', body: Buffer.from(body) });
  for (let i = 0; i < 5; i++) await send(`o${i}`);

  const gotA = [];
  const a = await consumer('NodeOffsetA', gotA);
  await a.subscribeLite('o1', OffsetOption.ofOffset(3));
  await settle('ofOffset(3)', gotA, ['o3', 'o4']);
  step('offset', { got: gotA });

  const gotB = [];
  const b = await consumer('NodeOffsetB', gotB);
  await b.subscribeLite('o1', OffsetOption.MAX_OFFSET);
  await sleep(500);
  await send('o5');
  await settle('MAX_OFFSET', gotB, ['o5']);
  step('max', { got: gotB });

  // TAIL_N counts back from the group's position: place group C at the end
  // (offset 6: nothing to consume, so the position cannot move), leave,
  // and come back 2 messages before it.
  const gotC = [];
  const c = await consumer('NodeOffsetC', gotC);
  await c.subscribeLite('o1', OffsetOption.ofOffset(6));
  await c.unsubscribeLite('o1');
  await c.subscribeLite('o1', OffsetOption.ofTailN(2));
  await settle('ofTailN(2)', gotC, ['o4', 'o5']);
  step('tail', { got: gotC });

  await Promise.all([a.close(), b.close(), c.close()]); // each waits for its long poll
  await producer.shutdown();
  step('done');
}

main().then(() => process.exit(0), err => { console.error(err); process.exit(1); });
