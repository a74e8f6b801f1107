// A concurrency gate for Artillery 2.x governed by throttle-governor's pull
// control (docs/tools/artillery.md). No dependencies (Node 18+: fetch).
//
// At most `offer` requests are in flight from this Artillery worker: the
// `throttleGate` beforeRequest hook waits for a free slot, and the
// `throttleCount` afterResponse and `throttleError` onError hooks free it
// and count the attempt (every resolved request, errors included) and the
// failure (a status >= 400, or an error such as a timeout or a refused
// connection). The offer is asked for at most once a second; the last
// answer is kept while the controller does not answer, and the gate opens
// at 1 until the first answer. The counters are served as Prometheus text
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

const OFFER_URL = process.env.THROTTLE_OFFER_URL;
const CLIENT = process.env.THROTTLE_CLIENT || 'artillery';
const TOKEN = process.env.THROTTLE_TOKEN;
const METRICS = process.env.THROTTLE_METRICS || '127.0.0.1:9465';
const DURATION = Number(process.env.THROTTLE_DURATION || 600);

let offer = 1; // until the first answer: one request (assume the most fragile target)
let askedAt = -Infinity;
let asking = null;
let inFlight = 0;
const waiting = []; // resolvers of requests waiting for a slot, first come first served
let attempts = 0;
let failures = 0;
let started = null; // the first use in this worker: the metrics server, the pump, the clock

function refresh() {
  const now = Date.now();
  if (asking || now - askedAt < 1000) return asking || Promise.resolve();
  askedAt = now;
  const url = `${OFFER_URL}${OFFER_URL.includes('?') ? '&' : '?'}client=${encodeURIComponent(CLIENT)}`;
  asking = fetch(url, {
    headers: TOKEN ? { Authorization: `Bearer ${TOKEN}` } : {},
    signal: AbortSignal.timeout(2000),
  })
    .then(async (res) => {
      const n = parseFloat(await res.text());
      if (res.status === 200 && Number.isFinite(n) && n >= 0) offer = n; // else keep the last one
    })
    .catch(() => {}) // keep the last offer until the controller answers
    .finally(() => {
      asking = null;
      pump();
    });
  return asking;
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
  // Keeps asking while requests wait (a full gate frees no slot to trigger it).
  setInterval(() => refresh(), 250).unref();
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
  refresh();
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
