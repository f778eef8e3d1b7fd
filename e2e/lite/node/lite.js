// Drives apogee's priority messages and lite topics with the official
// Node.js client (rocketmq-client-nodejs 1.0.8): a priority backlog reaches
// a SimpleConsumer highest level first; a LitePushConsumer receives its
// subscribed lite topic in order and not the other, a subscription past the
// server's maxLiteSubscriptionCount and a lite topic past
// maxLmqConsumeQueueNum are refused with the lite quota codes, and the
// consumer drops an expired lite topic when the server tells it.
// Usage: ENDPOINT=127.0.0.1:8081 PRIO_TOPIC=P LITE_TOPIC=L node lite.js
// (the server runs with maxLiteSubscriptionCount=1, maxLmqConsumeQueueNum=2
// and a short lite.topic.expiration). Prints one JSON line per step; exits
// non-zero on the first failure.
'use strict';

const { Producer, SimpleConsumer, LitePushConsumerBuilder, ConsumeResult } = require('rocketmq-client-nodejs');

const endpoint = process.env.ENDPOINT;
const prioTopic = process.env.PRIO_TOPIC;
const liteParent = process.env.LITE_TOPIC;
const quiet = { info() {}, warn() {}, error() {}, debug() {}, close() {} };
// The lite consumer's logger keeps its warnings: Node 1.0.8's Telemetry
// session does not dispatch NotifyUnsubscribeLiteCommand (command case 9)
// and logs it as an unrecognized command with its content, which is how
// this script sees that the server told the client.
const warnings = [];
const liteLogger = { ...quiet, warn(...args) { warnings.push(JSON.stringify(args)); } };
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

async function priority(producer) {
  const want = [];
  // Levels 1..3: Node 1.0.8 takes priority 0 for "no priority" (a falsy
  // check) and sends it as a NORMAL message.
  for (let i = 0; i < 3; i++) {
    for (let p = 1; p <= 3; p++) {
      await producer.send({ topic: prioTopic, priority: p, body: Buffer.from(`p${p}-${i}`) });
    }
  }
  for (let p = 3; p >= 1; p--) for (let i = 0; i < 3; i++) want.push(`p${p}-${i}`);
  const simple = new SimpleConsumer({ ...base, consumerGroup: 'NodePrioGroup', awaitDuration: 3000,
    subscriptions: new Map([[prioTopic, '*']]) });
  await simple.startup();
  const got = [];
  const deadline = Date.now() + 30000;
  while (got.length < want.length && Date.now() < deadline) {
    const msgs = await simple.receive(2, 20000);
    for (const m of msgs) {
      got.push(m.body.toString());
      if (m.priority !== Number(m.body.toString()[1])) fail(`message ${m.body} has priority ${m.priority}`);
      await simple.ack(m);
    }
  }
  await simple.shutdown();
  if (got.join(' ') !== want.join(' ')) fail(`priority order ${got.join(' ')}, want ${want.join(' ')}`);
  step('priority order', { got });
}

async function lite(producer) {
  const got = [];
  const consumer = await new LitePushConsumerBuilder()
    .setClientConfiguration({ ...base, logger: liteLogger })
    .setConsumerGroup('NodeLiteGroup')
    .bindTopic(liteParent)
    .setMessageListener({ consume(m) { got.push(`${m.liteTopic}:${m.body}`); return ConsumeResult.SUCCESS; } })
    .build();
  // build() starts a COMPLETE_ADD of the (empty) subscription set without
  // waiting for it; a PARTIAL_ADD that overtakes it is replaced by it.
  // Nothing observable says it arrived: give it time.
  await sleep(2000);
  await consumer.subscribeLite('n1');
  try {
    await consumer.subscribeLite('n2');
    fail('a second lite subscription past maxLiteSubscriptionCount=1 was accepted');
  } catch (e) {
    if (e.code !== 42902) throw e;
    step('subscription quota', { code: e.code, name: e.name });
  }
  for (let i = 0; i < 3; i++) await producer.send({ topic: liteParent, liteTopic: 'n1', body: Buffer.from(`m${i}`) });
  await producer.send({ topic: liteParent, liteTopic: 'n2', body: Buffer.from('other') });
  try {
    await producer.send({ topic: liteParent, liteTopic: 'n3', body: Buffer.from('over quota') });
    fail('a third lite topic past maxLmqConsumeQueueNum=2 was accepted');
  } catch (e) {
    if (e.code !== 42901) throw e;
    step('lite topic quota', { code: e.code, name: e.name });
  }
  await until('the lite messages', 30000, () => got.length >= 3);
  await sleep(500);
  if (got.join(' ') !== 'n1:m0 n1:m1 n1:m2') fail(`lite consumer got ${got.join(' ')}`);
  step('lite consumed', { got });
  // Expiry: a client that handled the command would drop n1 from its set;
  // 1.0.8 logs it as unrecognized.
  await until('the expiry notification', 60000, () => !consumer.getLiteTopicSet().has('n1') ||
    warnings.some(w => w.includes('notifyUnsubscribeLiteCommand') && w.includes('n1')));
  step('lite expired and unsubscribed', { clientDropped: !consumer.getLiteTopicSet().has('n1') });
  await consumer.close();
}

async function main() {
  const producer = new Producer({ ...base, topics: [prioTopic, liteParent] });
  await producer.startup();
  await priority(producer);
  await lite(producer);
  await producer.shutdown();
  step('done');
}

main().then(() => process.exit(0), err => { console.error(err); process.exit(1); });
