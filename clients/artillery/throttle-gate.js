// A concurrency gate for Artillery 2.x governed by throttle-governor's pull
// control (docs/tools/artillery.md). No dependencies (Node 18+).
//
// At most `offer` requests are in flight from this Artillery worker: the
// `throttleGate` beforeRequest hook waits for a free slot, and the
// `throttleCount` afterResponse and `throttleError` onError hooks free it
// and count the attempt (every resolved request, errors included) and the
// failure (a status >= 400, or an error such as a timeout or a refused
// connection). The offer is asked for, and then waited for on the
// controller (`If-None-Match` and `?wait=5s`): a new offer, a Down above
// all, applies the moment it is published, not up to a poll interval later
// (at a wall that rejects in a millisecond, each request over it fails
// every millisecond or two until then). A controller that answers at once
// (no waiting) is asked once a second. The last answer is kept while the
// controller does not answer, and the gate opens at 1 until the first
// answer. The counters are served as Prometheus text
// on THROTTLE_METRICS (default 127.0.0.1:9465) for a `kind = "prometheus"`
// signal.
//
// Environment: THROTTLE_OFFER_URL (required), THROTTLE_CLIENT (default
// "artillery"), THROTTLE_TOKEN (a bearer token, when the controller asks
// for one), THROTTLE_METRICS (host:port, or "off"), THROTTLE_DURATION
// (seconds that `throttleRunning` keeps a loop going, default 600).
//
// The gate is per Artillery worker thread. Artillery runs an `arrivalCount`
// phase in one worker, so every VU of such a phase shares one gate (the
// scenario in governed.yml). An `arrivalRate` phase is split over the
// machine's cores minus one workers, each with its own gate.
'use strict';

const http = require('node:http');
const https = require('node:https');

const OFFER_URL = process.env.THROTTLE_OFFER_URL;
const CLIENT = process.env.THROTTLE_CLIENT || 'artillery';
const TOKEN = process.env.THROTTLE_TOKEN;
const METRICS = process.env.THROTTLE_METRICS || '127.0.0.1:9465';
const DURATION = Number(process.env.THROTTLE_DURATION || 600);

// How long each ask waits on the controller for a new offer.
const WAIT_SECONDS = 5;

let offer = 1; // until the first answer: one request (assume the most fragile target)
let inFlight = 0;
const waiting = []; // resolvers of requests waiting for a slot, first come first served
let attempts = 0;
let failures = 0;
let started = null; // the first use in this worker: the metrics server, the pump, the clock

// One ask: resolves to { status, etag, body } (status -1 on any error).
// Its socket does not keep the worker alive at the end of the test.
function ask(url, etag) {
  return new Promise((resolve) => {
    const headers = {};
    if (TOKEN) headers.Authorization = `Bearer ${TOKEN}`;
    if (etag) headers['If-None-Match'] = etag;
    const lib = url.startsWith('https:') ? https : http;
    const req = lib.get(url, { headers, timeout: (WAIT_SECONDS + 5) * 1000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => {
        body += chunk;
      });
      res.on('end', () => resolve({ status: res.statusCode, etag: res.headers.etag, body }));
      res.on('error', () => resolve({ status: -1 }));
    });
    req.on('socket', (socket) => socket.unref());
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve({ status: -1 }));
  });
}

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

// Asks for the offer, then waits on the controller for each next one.
async function watchOffer() {
  const sep = OFFER_URL.includes('?') ? '&' : '?';
  const url = `${OFFER_URL}${sep}client=${encodeURIComponent(CLIENT)}&wait=${WAIT_SECONDS}s`;
  let etag = null;
  for (;;) {
    const began = Date.now();
    const res = await ask(url, etag);
    if (res.status === 200) {
      const n = parseFloat(res.body);
      if (Number.isFinite(n) && n >= 0) offer = n; // else keep the last one
      etag = res.etag || null;
      pump();
    } else if (res.status !== 304) {
      etag = null; // an error, 503 before the first offer, 401, 404: ask afresh
    }
    // After a new offer, or a wait the controller held, ask again at once:
    // that ask waits on the controller. Otherwise (an error, or a 304
    // answered at once by a controller that does not wait), in a second.
    const again = (res.status === 200 && etag) || (res.status === 304 && Date.now() - began >= 500);
    if (!again) await sleep(1000);
  }
}

// Hands free slots to waiting requests.
function pump() {
  while (waiting.length > 0 && inFlight < Math.floor(offer)) {
    inFlight += 1;
    waiting.shift()();
  }
}

function start() {
  if (started !== null) return;
  started = Date.now();
  if (!OFFER_URL) throw new Error('throttle-gate: set THROTTLE_OFFER_URL to the controller\'s offer URL');
  watchOffer();
  if (METRICS !== 'off') {
    const colon = METRICS.lastIndexOf(':');
    const server = http.createServer((req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/plain; version=0.0.4; charset=utf-8' });
      res.end(
        '# HELP throttle_gate_attempts_total Gated requests resolved (every attempt, failures included).\n' +
          '# TYPE throttle_gate_attempts_total counter\n' +
          `throttle_gate_attempts_total ${attempts}\n` +
          '# HELP throttle_gate_failures_total Gated requests that failed (status >= 400 or an error).\n' +
          '# TYPE throttle_gate_failures_total counter\n' +
          `throttle_gate_failures_total ${failures}\n` +
          '# HELP throttle_gate_offer The offer the gate applies.\n' +
          '# TYPE throttle_gate_offer gauge\n' +
          `throttle_gate_offer ${offer}\n` +
          '# HELP throttle_gate_in_flight Gated requests in flight.\n' +
          '# TYPE throttle_gate_in_flight gauge\n' +
          `throttle_gate_in_flight ${inFlight}\n`
      );
    });
    server.on('error', (err) => {
      console.error(`throttle-gate: cannot serve /metrics on ${METRICS}: ${err.message}`);
    });
    server.listen(Number(METRICS.slice(colon + 1)), METRICS.slice(0, colon));
    server.unref();
  }
}

// Frees the request's slot and counts it, once per gated request.
function resolved(requestParams, failed) {
  if (!requestParams || !requestParams.__throttleSlot) return;
  requestParams.__throttleSlot = false;
  attempts += 1;
  if (failed) failures += 1;
  inFlight -= 1;
  pump();
}

// beforeRequest: waits for a slot.
async function throttleGate(requestParams, context) {
  start();
  // A VU sends one request at a time: a slot it still holds is its last one's.
  resolved(context.__throttleLast, true);
  if (waiting.length === 0 && inFlight < Math.floor(offer)) {
    inFlight += 1;
  } else {
    await new Promise((resolve) => waiting.push(resolve));
  }
  requestParams.__throttleSlot = true;
  context.__throttleLast = requestParams;
}

// afterResponse: a response is an attempt; a status >= 400 is a failed one.
function throttleCount(requestParams, response, context, ee, next) {
  resolved(requestParams, response.statusCode >= 400);
  return next();
}

// onError: a request that ended without a response (timeout, refused, reset) failed.
function throttleError(err, requestParams, context, ee, next) {
  resolved(requestParams, true);
  return next();
}

// whileTrue of a loop: keeps going for THROTTLE_DURATION seconds from the first request.
function throttleRunning(context, next) {
  return next(started === null || Date.now() - started < DURATION * 1000);
}

module.exports = { throttleGate, throttleCount, throttleError, throttleRunning };
