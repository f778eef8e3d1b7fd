// Drives an apogee gRPC endpoint with the official Node.js client
// (rocketmq-client-nodejs 1.0.8): a Producer sends messages (normal, with
// properties and keys, and a delay message it recalls), a SimpleConsumer
// receives and acks them, and a PushConsumer consumes a second batch.
// Usage: ENDPOINT=127.0.0.1:8081 TOPIC=T DELAY_TOPIC=D node interop.js
// Prints one JSON line per step; exits non-zero on the first failure.
'use strict';

const { Producer, SimpleConsumer, PushConsumer, ConsumeResult } = require('rocketmq-client-nodejs');

const endpoint = process.env.ENDPOINT;
const topic = process.env.TOPIC;
const delayTopic = process.env.DELAY_TOPIC;
const quiet = { info() {}, warn() {}, error() {}, debug() {}, close() {} };
const base = { endpoints: endpoint, namespace: '', logger: quiet, requestTimeout: 5000 };

function step(name, data) { console.log(JSON.stringify({ step: name, ...data })); }
function fail(msg) { throw new Error(msg); }

async function main() {
  const producer = new Producer({ ...base, topics: [topic, delayTopic] });
  await producer.startup();
  step('producer started');

  const sent = new Map();
  for (let i = 0; i < 5; i++) {
    const receipt = await producer.send({
      topic, tag: 'node', keys: [`key-${i}`],
      properties: new Map([['from', 'node'], ['n', String(i)]]),
      body: Buffer.from(`node message ${i}`),
    });
    sent.set(receipt.messageId, `node message ${i}`);
  }
  step('sent', { ids: [...sent.keys()] });

  const delayed = await producer.send({ topic: delayTopic, body: Buffer.from('recall me'), delay: 60000 });
  if (!delayed.recallHandle) fail('delay send returned no recall handle');
  const recalled = await producer.recallMessage(delayTopic, delayed.recallHandle);
  if (recalled.messageId !== delayed.messageId) fail(`recall answered ${recalled.messageId}, want ${delayed.messageId}`);
  step('recalled', { id: delayed.messageId });

  const simple = new SimpleConsumer({ ...base, consumerGroup: 'NodeSimpleGroup', awaitDuration: 3000,
    subscriptions: new Map([[topic, 'node']]) });
  await simple.startup();
  const got = new Map();
  const deadline = Date.now() + 30000;
  while (got.size < sent.size && Date.now() < deadline) {
    const msgs = await simple.receive(16, 20000);
    for (const m of msgs) {
      if (!sent.has(m.messageId)) fail(`unexpected message ${m.messageId}`);
      if (m.body.toString() !== sent.get(m.messageId)) fail(`body of ${m.messageId}: ${m.body}`);
      if (m.tag !== 'node' || m.properties.get('from') !== 'node' || m.keys.length !== 1) {
        fail(`message ${m.messageId}: tag ${m.tag} keys ${m.keys} props ${[...m.properties]}`);
      }
      if (m.deliveryAttempt !== 1) fail(`delivery attempt ${m.deliveryAttempt}`);
      got.set(m.messageId, true);
      await simple.ack(m);
    }
  }
  if (got.size !== sent.size) fail(`simple consumer got ${got.size} of ${sent.size}`);
  step('simple consumed', { count: got.size });
  await simple.shutdown();

  const pushIds = new Set();
  for (let i = 0; i < 5; i++) {
    const r = await producer.send({ topic, tag: 'push', body: Buffer.from(`push ${i}`) });
    pushIds.add(r.messageId);
  }
  const consumed = new Set();
  let failedOnce = false;
  const push = new PushConsumer({ ...base, consumerGroup: 'NodePushGroup', longPollingTimeout: 5000,
    subscriptions: new Map([[topic, 'push']]),
    messageListener: {
      async consume(m) {
        if (!failedOnce) { failedOnce = true; return ConsumeResult.FAILURE; } // nacked, comes back
        consumed.add(m.messageId);
        return ConsumeResult.SUCCESS;
      },
    } });
  await push.startup();
  const pushDeadline = Date.now() + 40000;
  while (consumed.size < pushIds.size && Date.now() < pushDeadline) {
    await new Promise(r => setTimeout(r, 100));
  }
  for (const id of pushIds) if (!consumed.has(id)) fail(`push consumer never consumed ${id}`);
  step('push consumed', { count: consumed.size });
  await push.shutdown();
  await producer.shutdown();
}

main().then(() => { step('ok'); process.exit(0); }, (err) => {
  console.error(err && err.stack || err);
  process.exit(1);
});
